"""``kb.extract.java`` on Java source written the way Kafka writes it.

Pure: no database. Each test states the sites a reader would list by hand for the source
it holds (line, template in the source's own notation, kind, class, code, status, and the
qualified function), so a construct missed, a template misread or a site invented fails.
"""

from __future__ import annotations

import textwrap

from kb.extract import java
from kb.extract.extract import extract_file
from kb.extract.sites import ErrorType, Notation, Severity, Site

SOURCE = textwrap.dedent(
    '''\
    package org.example.coordinator;

    import java.text.MessageFormat;
    import java.util.Locale;
    import javax.ws.rs.core.Response;

    public class GroupCoordinator {
        private static final Logger log = LoggerFactory.getLogger(GroupCoordinator.class);
        static final String CLOSED_MESSAGE = "The coordinator is closed and takes no requests";
        private static final String GROUP_CONFIG = "group.protocol";

        // throw new IllegalStateException("a comment is not code");
        private final String banner = "throw new IllegalStateException(\\"text is not code\\")";

        public void join(String groupId, int epoch, Member member) {
            if (groupId == null)
                throw new InvalidRequestException("Group id must not be null for member " +
                    member.id() + " at epoch " + epoch
                    + ".");
            if (epoch < 0) {
                throw new IllegalArgumentException(String.format(Locale.ROOT,
                    "Epoch %d of group %s is negative", epoch, groupId));
            }
            if (closed) {
                throw new CoordinatorClosedException(CLOSED_MESSAGE);
            }
            log.warn("Member {} of group {} rejoined with a stale epoch {}",
                member.id(), groupId, epoch);
            log.info("Member {} joined group {}", member.id(), groupId);
            log.error("Ok: {}", groupId);
            this.log.error("Rebalance of group " + groupId + " failed: {}", reason, error);
            future.completeExceptionally(new GroupRebalanceException(
                member.isStatic() ? "Static member cannot rejoin"
                    : "Dynamic member cannot rejoin"));
            throw Errors.FENCED_INSTANCE_ID.exception("Static member " + member.id() +
                " was fenced by member " + other + ".");
        }

        void validate(Map<String, Object> configs, Object value) {
            if (value == null)
                throw new ConfigException(GROUP_CONFIG, value, "must be set and non-null.");
            throw new ConfigException(MessageFormat.format("Value {0} of {1} is not a protocol",
                value, GROUP_CONFIG));
        }

        ApiError check(String name) {
            if (name.isEmpty()) {
                return new ApiError(Errors.INVALID_REQUEST, "Invalid empty group name " + name);
            }
            throw new ConnectRestException(
                Response.Status.CONFLICT.getStatusCode(),
                "Group " + name + " is being rebalanced");
        }

        void lookup(String connector) {
            throw new NotFoundException("Unknown connector " + connector);
        }

        void describe(String topic, int partitions) {
            if (partitions == 0) {
                String msg = String.format("Topic %s has no partitions", topic);
                log.debug(msg);
                throw new UnknownServerException(msg);
            }
            final String errorMessage = partitions > 100
                ? "Topic " + topic + " has too many partitions"
                : "Topic " + topic + " has too few partitions";
            log.error(errorMessage);
            throw new IllegalStateException(errorMessage);
        }

        void commit(boolean fenced, String id) {
            String message;
            if (fenced) {
                message = "Commit rejected: member " + id + " is fenced";
            } else {
                message = "Commit rejected: the generation is stale";
            }
            if (id == null) {
                message = "never used at the throw below";
                return;
            }
            throw new CommitFailedException(message);
        }

        void built(List<String> names) {
            String msg = "Unknown names:";
            msg += String.join(",", names);
            throw new IllegalArgumentException(msg);
        }

        void unreadable(Exception e) {
            throw new KafkaException(e.getMessage(), e);
        }

        void tooShort() {
            throw new IllegalStateException("bad " + x);
        }

        void escapes() {
            throw new IllegalStateException("Tab\\there, quote \\"q\\", newline\\nend");
        }

        void block() {
            throw new UnsupportedOperationException("""
                Text blocks are
                  kept as written""");
        }

        void wrapped() {
            throw new StreamsException(formatException("Producer got fenced trying to commit"), e);
        }

        String formatted(int n) {
            throw new IllegalStateException("Found %d stale members".formatted(n));
        }

        void checks(String key, Object value) {
            Objects.requireNonNull(key, "key cannot be null for a lookup");
            requireNonNull(value, () -> "value of " + key + " cannot be null");
            Preconditions.checkArgument(key.length() < 10, "Key %s is longer than allowed", key);
            Preconditions.checkState(open, "The store is not open anymore");
            validator.checkState(open, "not a Guava check at all here");
        }

        static class Assignor {
            class Plan {
                void compute() {
                    Runnable task = () -> {
                        throw new IllegalStateException("Assignment failed inside a lambda");
                    };
                    Runnable listener = new Runnable() {
                        @Override
                        public void run() {
                            log.error("Listener failed for plan {}", this);
                        }
                    };
                }
            }
        }
    }

    enum Errors {
        NONE(0, null, message -> null),
        FENCED_INSTANCE_ID(82, "The broker rejected this static consumer since another consumer "
            + "with the same group.instance.id has registered.", FencedInstanceIdException::new),
        INVALID_REQUEST(42, "This most likely occurs because of a request being malformed.",
            InvalidRequestException::new);
    }
    '''
)


def line_of(fragment: str, source: str = SOURCE) -> int:
    """The 1-based line of the only line of ``source`` holding ``fragment``."""
    lines = [n for n, line in enumerate(source.splitlines(), 1) if fragment in line]
    assert len(lines) == 1, (fragment, lines)
    return lines[0]


def by_template(found: list[Site]) -> dict[str, Site]:
    table = {site.template: site for site in found}
    assert len(table) == len(found), [site.template for site in found]
    return table


def test_every_site_of_a_java_file_in_source_order() -> None:
    found = java.sites("core/src/main/java/GroupCoordinator.java", SOURCE)
    assert [(site.line, site.template) for site in found] == [
        (
            line_of('new InvalidRequestException("Group id'),
            "Group id must not be null for member {} at epoch {}.",
        ),
        (line_of("new IllegalArgumentException(String.format"), "Epoch %d of group %s is negative"),
        (line_of("(CLOSED_MESSAGE)"), "The coordinator is closed and takes no requests"),
        (line_of('log.warn("Member {}'), "Member {} of group {} rejoined with a stale epoch {}"),
        (line_of('this.log.error("Rebalance'), "Rebalance of group {} failed: {}"),
        (line_of("new GroupRebalanceException("), "Static member cannot rejoin"),
        (line_of("new GroupRebalanceException("), "Dynamic member cannot rejoin"),
        (line_of("throw Errors.FENCED_INSTANCE_ID"), "Static member {} was fenced by member {}."),
        (line_of('value, "must be set'), "must be set and non-null."),
        (line_of('MessageFormat.format("Value'), "Value {0} of {1} is not a protocol"),
        (line_of("new ApiError(Errors.INVALID_REQUEST"), "Invalid empty group name {}"),
        (line_of("throw new ConnectRestException("), "Group {} is being rebalanced"),
        (line_of("new NotFoundException("), "Unknown connector {}"),
        (line_of("new UnknownServerException(msg)"), "Topic %s has no partitions"),
        (line_of("new IllegalStateException(errorMessage)"), "Topic {} has too many partitions"),
        (line_of("new IllegalStateException(errorMessage)"), "Topic {} has too few partitions"),
        (line_of("new CommitFailedException(message)"), "Commit rejected: member {} is fenced"),
        (line_of("new CommitFailedException(message)"), "Commit rejected: the generation is stale"),
        (line_of('"Tab'), 'Tab\there, quote "q", newline\nend'),
        (line_of('UnsupportedOperationException("""'), "Text blocks are\n  kept as written"),
        (line_of("formatException("), "Producer got fenced trying to commit"),
        (line_of('"Found %d'), "Found %d stale members"),
        (line_of("Objects.requireNonNull(key"), "key cannot be null for a lookup"),
        (line_of("requireNonNull(value"), "value of {} cannot be null"),
        (line_of("checkArgument("), "Key %s is longer than allowed"),
        (line_of("Preconditions.checkState("), "The store is not open anymore"),
        (line_of("inside a lambda"), "Assignment failed inside a lambda"),
        (line_of('"Listener failed'), "Listener failed for plan {}"),
        (
            line_of("FENCED_INSTANCE_ID(82"),
            "The broker rejected this static consumer since another consumer with the same "
            "group.instance.id has registered.",
        ),
        (
            line_of("INVALID_REQUEST(42"),
            "This most likely occurs because of a request being malformed.",
        ),
    ]


def test_kinds_classes_codes_and_statuses() -> None:
    found = by_template(java.sites("GroupCoordinator.java", SOURCE))
    first = found["Group id must not be null for member {} at epoch {}."]
    assert (first.error_type, first.severity, first.error_class, first.notation, first.call) == (
        ErrorType.EXCEPTION,
        Severity.ERROR,
        "InvalidRequestException",
        Notation.PLAIN,
        "throw new InvalidRequestException",
    )
    assert first.end_line == first.line + 2  # the call spans three lines
    assert found["Epoch %d of group %s is negative"].notation is Notation.PRINTF
    assert found["Value {0} of {1} is not a protocol"].notation is Notation.JAVA_MESSAGE_FORMAT
    assert found["Found %d stale members"].notation is Notation.PRINTF
    warn = found["Member {} of group {} rejoined with a stale epoch {}"]
    assert (warn.error_type, warn.severity, warn.notation, warn.call) == (
        ErrorType.LOG,
        Severity.WARNING,
        Notation.SLF4J,
        "log.warn",
    )
    logged = found["Rebalance of group {} failed: {}"]
    assert (logged.severity, logged.call) == (Severity.ERROR, "this.log.error")
    built = found["Static member cannot rejoin"]
    assert (built.call, built.error_class) == (
        "new GroupRebalanceException",
        "GroupRebalanceException",
    )
    fenced = found["Static member {} was fenced by member {}."]
    assert (fenced.error_type, fenced.error_code, fenced.error_class) == (
        ErrorType.ERROR_CODE,
        "FENCED_INSTANCE_ID",
        None,
    )
    api = found["Invalid empty group name {}"]
    assert (api.error_type, api.error_code, api.error_class) == (
        ErrorType.ERROR_CODE,
        "INVALID_REQUEST",
        "ApiError",
    )
    assert found["Group {} is being rebalanced"].http_status == 409
    assert found["Unknown connector {}"].http_status == 404
    assert found["Topic %s has no partitions"].http_status is None
    constant = found["This most likely occurs because of a request being malformed."]
    assert (constant.error_type, constant.error_code, constant.error_class, constant.function) == (
        ErrorType.ERROR_CODE,
        "INVALID_REQUEST",
        "InvalidRequestException",
        "Errors.INVALID_REQUEST",
    )


def test_argument_checks_throw_their_message() -> None:
    found = by_template(java.sites("GroupCoordinator.java", SOURCE))
    checks = [
        found[template]
        for template in (
            "key cannot be null for a lookup",
            "value of {} cannot be null",
            "Key %s is longer than allowed",
            "The store is not open anymore",
        )
    ]
    assert [(c.error_type, c.error_class, c.notation, c.call) for c in checks] == [
        (ErrorType.EXCEPTION, "NullPointerException", Notation.PLAIN, "Objects.requireNonNull"),
        (ErrorType.EXCEPTION, "NullPointerException", Notation.PLAIN, "requireNonNull"),
        (
            ErrorType.EXCEPTION,
            "IllegalArgumentException",
            Notation.PRINTF,
            "Preconditions.checkArgument",
        ),
        (ErrorType.EXCEPTION, "IllegalStateException", Notation.PLAIN, "Preconditions.checkState"),
    ]


def test_qualified_function_names() -> None:
    found = by_template(java.sites("GroupCoordinator.java", SOURCE))
    assert found["Group id must not be null for member {} at epoch {}."].function == (
        "GroupCoordinator.join"
    )
    assert found["Assignment failed inside a lambda"].function == (
        "GroupCoordinator.Assignor.Plan.compute"
    )
    # the anonymous class has no name: its method is named inside the enclosing one
    assert found["Listener failed for plan {}"].function == (
        "GroupCoordinator.Assignor.Plan.compute.run"
    )


def test_what_is_left_out() -> None:
    templates = {site.template for site in java.sites("GroupCoordinator.java", SOURCE)}
    left_out = [
        "a comment is not code",
        'text is not code")',
        "Member {} joined group {}",  # info
        "Ok: {}",  # fewer than 8 literal characters
        "bad {}",
        "never used at the throw below",  # assigned in a branch that returns
        "Unknown names:",  # built with +=: not followed
        "Unknown names:{}",
        "group.protocol",  # the literal argument wins over a constant naming the config
        "not a Guava check at all here",  # checkState of some other object
    ]
    assert [t for t in left_out if t in templates] == []
    assert not any(t == "%s" or t == "{}" for t in templates)


def test_a_message_logged_then_thrown_is_one_site_at_the_throw() -> None:
    found = java.sites("GroupCoordinator.java", SOURCE)
    sites_of = [site for site in found if site.template == "Topic {} has too many partitions"]
    assert [(site.line, site.error_type) for site in sites_of] == [
        (line_of("new IllegalStateException(errorMessage)"), ErrorType.EXCEPTION)
    ]


def test_a_message_variable_only_logged_is_a_log_site() -> None:
    source = textwrap.dedent(
        """\
        class Fetcher {
            void fetch(String topic) {
                final String errorMessage = "Fetch of topic " + topic + " failed";
                log.error(errorMessage);
                log.warn(errorMessage);
            }
            void other(String topic) {
                final String errorMessage = "Fetch of topic " + topic + " failed";
                log.warn(errorMessage);
            }
        }
        """
    )
    found = java.sites("Fetcher.java", source)
    assert [(site.line, site.severity, site.function) for site in found] == [
        (4, Severity.ERROR, "Fetcher.fetch"),
        (9, Severity.WARNING, "Fetcher.other"),
    ]


def test_a_constant_logged_then_thrown_is_one_site_at_the_throw() -> None:
    source = textwrap.dedent(
        """\
        class TopicManager {
            static final String INTERRUPTED = "Thread got interrupted while creating topics";
            void create() {
                try {
                    future.get();
                } catch (InterruptedException e) {
                    log.error(INTERRUPTED, e);
                    throw new IllegalStateException(INTERRUPTED, e);
                }
            }
            void delete() {
                log.error(INTERRUPTED);
            }
        }
        """
    )
    found = java.sites("TopicManager.java", source)
    assert [(site.line, site.error_type, site.function) for site in found] == [
        (8, ErrorType.EXCEPTION, "TopicManager.create"),
        (12, ErrorType.LOG, "TopicManager.delete"),
    ]


def test_overloads_each_keep_their_variable_site() -> None:
    source = textwrap.dedent(
        """\
        class Manager {
            void assign(int epoch) {
                String msg = String.format("Failed to compute assignment for epoch %d", epoch);
                throw new UnknownServerException(msg);
            }
            void assign(long epoch) {
                String msg = String.format("Failed to compute assignment for epoch %d", epoch);
                throw new UnknownServerException(msg);
            }
        }
        """
    )
    assert [site.line for site in java.sites("Manager.java", source)] == [4, 8]


def test_extract_file_dispatches_java_and_reads_broken_source() -> None:
    data = b'class A { void f() { throw new IllegalStateException("Broken but readable " + x); '
    found = extract_file("src/main/java/A.java", data)
    assert [(site.path, site.template) for site in found] == [
        ("src/main/java/A.java", "Broken but readable {}")
    ]


def test_a_generated_concatenation_and_hostile_nesting_are_read_without_recursion() -> None:
    terms = " + ".join(f'"part{n} " + v{n}' for n in range(3000))
    nested = "(" * 5000 + '"Deeply nested message"' + ")" * 5000
    source = (
        "class Generated {\n"
        f"  void f() {{ throw new IllegalStateException({terms}); }}\n"
        f"  void g() {{ throw new IllegalStateException({nested}); }}\n"
        "}\n"
    )
    found = java.sites("Generated.java", source)
    assert [site.line for site in found] == [2]
    assert found[0].template == "".join(f"part{n} {{}}" for n in range(3000))
