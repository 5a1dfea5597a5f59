"""``kb.extract.scala`` on Scala source written the way Kafka's core writes it.

Pure: no database. Each test states the sites a reader would list by hand for the source
it holds, so a construct missed, a template misread or a site invented fails.
"""

from __future__ import annotations

import textwrap

from kb.extract import scala
from kb.extract.extract import extract_file
from kb.extract.sites import ErrorType, Notation, Severity, Site

SOURCE = textwrap.dedent(
    '''\
    package kafka.server

    import org.apache.kafka.common.protocol.Errors

    object ReplicaManager {
      val UnknownLogDirMessage = "The log directory is not known to this broker"
    }

    class ReplicaManager(config: KafkaConfig) extends Logging {
      // throw new IllegalStateException("a comment is not code")
      private val banner = "throw new IllegalStateException(\\"text is not code\\")"

      def appendRecords(timeout: Long, requiredAcks: Short): Unit = {
        require(timeout >= 0, s"Timeout $timeout must not be negative")
        if (!isValidRequiredAcks(requiredAcks))
          throw new InvalidRequiredAcksException("Invalid required acks " + requiredAcks +
            " for a produce request")
        error(s"Error processing append operation on partition ${tp.topic}-${tp.partition}", e)
        warn(f"Append of $count%d records took too long")
        info(s"Appended $count records to the log")
        stateChangeLogger.warn("Ignoring the append: the broker %s is shutting down".format(id))
        throw Errors.NOT_LEADER_OR_FOLLOWER.exception(s"Broker $brokerId is not the leader")
      }

      def alterReplicaLogDirs(dir: String): Unit = {
        if (dir == null)
          throw new KafkaStorageException(ReplicaManager.UnknownLogDirMessage)
        val msg = s"""Log directory $dir is offline:
                     |  moving its replicas fails""".stripMargin
        error(msg)
        throw new KafkaStorageException(msg)
      }

      def describe(online: Boolean): Unit = {
        warn(if (online) "The log directory is online" else s"The log directory $dir is offline")
        sys.error("Unreachable code was reached")
      }

      def tooShort(): Unit = {
        throw new IllegalStateException(s"bad $x")
      }

      def unreadable(e: Throwable): Unit = {
        throw new KafkaException(e.getMessage, e)
      }

      class Fetcher {
        def fetch(): Unit = {
          partitions.foreach { tp =>
            throw new IllegalStateException(s"Partition $tp has no leader in a closure")
          }
        }
      }
    }
    '''
)


def line_of(fragment: str) -> int:
    lines = [n for n, line in enumerate(SOURCE.splitlines(), 1) if fragment in line]
    assert len(lines) == 1, (fragment, lines)
    return lines[0]


def by_template(found: list[Site]) -> dict[str, Site]:
    table = {site.template: site for site in found}
    assert len(table) == len(found), [site.template for site in found]
    return table


def test_every_site_of_a_scala_file_in_source_order() -> None:
    found = scala.sites("core/src/main/scala/kafka/server/ReplicaManager.scala", SOURCE)
    assert [(site.line, site.template) for site in found] == [
        (line_of("require(timeout"), "requirement failed: Timeout $timeout must not be negative"),
        (
            line_of("new InvalidRequiredAcksException("),
            "Invalid required acks {} for a produce request",
        ),
        (
            line_of('error(s"Error processing'),
            "Error processing append operation on partition ${tp.topic}-${tp.partition}",
        ),
        (line_of('warn(f"Append'), "Append of $count records took too long"),
        (
            line_of("stateChangeLogger.warn("),
            "Ignoring the append: the broker %s is shutting down",
        ),
        (line_of("NOT_LEADER_OR_FOLLOWER"), "Broker $brokerId is not the leader"),
        (line_of("(ReplicaManager.Unknown"), "The log directory is not known to this broker"),
        (
            line_of("new KafkaStorageException(msg)"),
            "Log directory $dir is offline:\n  moving its replicas fails",
        ),
        (line_of("warn(if (online)"), "The log directory is online"),
        (line_of("warn(if (online)"), "The log directory $dir is offline"),
        (line_of("sys.error("), "Unreachable code was reached"),
        (line_of("in a closure"), "Partition $tp has no leader in a closure"),
    ]


def test_kinds_classes_codes_and_notations() -> None:
    found = by_template(scala.sites("ReplicaManager.scala", SOURCE))
    required = found["requirement failed: Timeout $timeout must not be negative"]
    assert (required.error_type, required.error_class, required.notation, required.call) == (
        ErrorType.EXCEPTION,
        "IllegalArgumentException",
        Notation.SCALA,
        "require",
    )
    acks = found["Invalid required acks {} for a produce request"]
    assert (acks.error_class, acks.notation, acks.call, acks.end_line) == (
        "InvalidRequiredAcksException",
        Notation.PLAIN,
        "throw new InvalidRequiredAcksException",
        acks.line + 1,
    )
    logged = found["Error processing append operation on partition ${tp.topic}-${tp.partition}"]
    assert (logged.error_type, logged.severity, logged.call) == (
        ErrorType.LOG,
        Severity.ERROR,
        "error",
    )
    warned = found["Ignoring the append: the broker %s is shutting down"]
    assert (warned.severity, warned.notation, warned.call) == (
        Severity.WARNING,
        Notation.PRINTF,
        "stateChangeLogger.warn",
    )
    coded = found["Broker $brokerId is not the leader"]
    assert (coded.error_type, coded.error_code) == (ErrorType.ERROR_CODE, "NOT_LEADER_OR_FOLLOWER")
    assert found["Unreachable code was reached"].error_class == "RuntimeException"


def test_qualified_function_names() -> None:
    found = by_template(scala.sites("ReplicaManager.scala", SOURCE))
    assert found["Invalid required acks {} for a produce request"].function == (
        "ReplicaManager.appendRecords"
    )
    assert found["Partition $tp has no leader in a closure"].function == (
        "ReplicaManager.Fetcher.fetch"
    )


def test_what_is_left_out() -> None:
    templates = {site.template for site in scala.sites("ReplicaManager.scala", SOURCE)}
    left_out = [
        "a comment is not code",
        'text is not code")',
        "Appended $count records to the log",  # info
        "bad $x",  # fewer than 8 literal characters
    ]
    assert [t for t in left_out if t in templates] == []
    # the message variable is logged and then thrown: one site, at the throw
    offline = [t for t in templates if t.startswith("Log directory $dir")]
    assert len(offline) == 1


def test_extract_file_dispatches_scala() -> None:
    data = b'object A { def f() = throw new IllegalStateException(s"Broken state $x here") }'
    found = extract_file("core/src/main/scala/A.scala", data)
    assert [(site.path, site.template, site.function) for site in found] == [
        ("core/src/main/scala/A.scala", "Broken state $x here", "A.f")
    ]


def test_a_generated_concatenation_and_hostile_nesting_are_read_without_recursion() -> None:
    terms = " + ".join(f'"part{n} " + v{n}' for n in range(3000))
    nested = "(" * 5000 + '"Deeply nested message"' + ")" * 5000
    source = (
        "object Generated {\n"
        f"  def f() = throw new IllegalStateException({terms})\n"
        f"  def g() = throw new IllegalStateException({nested})\n"
        "}\n"
    )
    found = scala.sites("Generated.scala", source)
    assert [site.line for site in found] == [2]
    assert found[0].template == "".join(f"part{n} {{}}" for n in range(3000))
