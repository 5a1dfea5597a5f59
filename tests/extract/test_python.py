"""``kb.extract.python`` on Python source written the way SQLAlchemy and Django write it.

No database: the extractor is pure. Each test writes a small module with the construct it
is about, beside the neighbours it must not be confused with, and asserts the sites found:
template (in the source's own notation), line, kind, class, code and function.
"""

from __future__ import annotations

from textwrap import dedent

import pytest

from kb.extract import python
from kb.extract.python import MIN_LITERAL_CHARS, literal_chars, sites
from kb.extract.sites import ErrorType, Notation, Severity, Site


def extract(source: str, path: str = "lib/pkg/mod.py") -> list[Site]:
    return sites(path, dedent(source).lstrip("\n"))


def templates(source: str) -> list[str]:
    return [site.template for site in extract(source)]


def one(source: str) -> Site:
    found = extract(source)
    assert len(found) == 1, found
    return found[0]


def test_raise_with_percent_over_a_multi_line_call_of_implicitly_concatenated_literals() -> None:
    site = one(
        """
        from sqlalchemy import exc


        class Mapper:
            def _check(self, key, value):
                if value is None:
                    raise exc.InvalidRequestError(
                        "Mapper '%s' has no property '%s'.  If this property was "
                        "indicated from other mappers or configure events, ensure "
                        "registry.configure() has been called." % (self, key)
                    )
        """
    )
    assert site.template == (
        "Mapper '%s' has no property '%s'.  If this property was indicated from other "
        "mappers or configure events, ensure registry.configure() has been called."
    )
    assert site.notation is Notation.PYTHON_PERCENT
    assert (site.line, site.end_line) == (7, 11)
    assert site.error_type is ErrorType.EXCEPTION
    assert site.severity is Severity.ERROR
    assert site.error_class == "InvalidRequestError"
    assert site.function == "Mapper._check"
    assert site.call == "raise exc.InvalidRequestError"


def test_format_with_positional_and_named_arguments_keeps_the_braces_as_written() -> None:
    found = extract(
        """
        def check(name, kind):
            if kind:
                raise ValueError("Unknown kind {} for field {}".format(kind, name))
            raise TypeError(
                "Field {name!r} must be a {expected}, not {0}".format(
                    type(name), name=name, expected="str"
                )
            )
        """
    )
    assert [(s.template, s.notation, s.line) for s in found] == [
        ("Unknown kind {} for field {}", Notation.PYTHON_FORMAT, 3),
        ("Field {name!r} must be a {expected}, not {0}", Notation.PYTHON_FORMAT, 4),
    ]


def test_f_strings_keep_each_field_as_written_and_decode_escapes_of_the_literal_text() -> None:
    found = extract(
        """
        def create(pool, dialect, key):
            raise ArgumentError(
                f"Pool class {pool.__class__.__name__} cannot be "
                f"used with {'non-' if not dialect.is_async else ''}"
                "asyncio engine"
            )
            raise KeyError(f"Table {key!r:>10} is\\tdefined; use {{extend_existing}}")
            raise KeyError(r"A raw \\n stays as written, key")
            raise KeyError(f"No fields here, {{only}} braces")
        """
    )
    assert [s.template for s in found] == [
        "Pool class {pool.__class__.__name__} cannot be used with "
        "{'non-' if not dialect.is_async else ''}asyncio engine",
        "Table {key!r:>10} is\tdefined; use {{extend_existing}}",
        "A raw \\n stays as written, key",
        "No fields here, {only} braces",
    ]
    assert [s.notation for s in found] == [
        Notation.PYTHON_FORMAT,
        Notation.PYTHON_FORMAT,
        Notation.PLAIN,
        Notation.PLAIN,
    ]


def test_plus_concatenation_across_lines_writes_each_non_literal_part_as_a_hole() -> None:
    found = extract(
        """
        def close(self, rollback_exc, name):
            raise InvalidRequestError(
                "Can't operate on closed transaction inside context "
                "manager.  "
                + (
                    "The transaction was rolled back due to an "
                    f"exception: {rollback_exc}.  "
                    if rollback_exc is not None
                    else ""
                )
                + "Please complete the context manager before "
                "emitting further commands."
            )
            raise ValueError("Column " + name + " is not part of " + self.table.name)
        """
    )
    assert [s.template for s in found] == [
        "Can't operate on closed transaction inside context manager.  {}Please complete "
        "the context manager before emitting further commands.",
        "Column {} is not part of {}",
    ]
    assert [s.notation for s in found] == [Notation.PLAIN, Notation.PLAIN]


def test_a_conditional_message_gives_a_site_per_side() -> None:
    found = extract(
        """
        def one(self, raise_for_none):
            raise MultipleResultsFound(
                "Multiple rows were found when exactly one was required"
                if raise_for_none
                else "Multiple rows were found when one or none was required"
            )
        """
    )
    assert [(s.template, s.line) for s in found] == [
        ("Multiple rows were found when exactly one was required", 2),
        ("Multiple rows were found when one or none was required", 2),
    ]


def test_constructions_of_error_exception_and_warning_classes_count_unraised() -> None:
    found = extract(
        """
        from django.core import checks


        def make(errors, name):
            errors.append(checks.Error("Checks are not exceptions: %s" % name, id="x.E001"))
            exc = FieldError("The SECRET_KEY setting must not be empty.")
            ImproperlyConfigured("Not raised and not named like an exception class")
            warnings.warn(RemovedInDjango70Warning("Passing positional arguments is deprecated."))
            return exc.ArgumentError("Expected mapped entity or selectable, got %r" % name)
        """
    )
    assert [(s.template, s.error_class, s.severity, s.call) for s in found] == [
        (
            "The SECRET_KEY setting must not be empty.",
            "FieldError",
            Severity.ERROR,
            "FieldError",
        ),
        (
            "Passing positional arguments is deprecated.",
            "RemovedInDjango70Warning",
            Severity.WARNING,
            "RemovedInDjango70Warning",
        ),
        (
            "Expected mapped entity or selectable, got %r",
            "ArgumentError",
            Severity.ERROR,
            "exc.ArgumentError",
        ),
    ]
    assert {s.error_type for s in found} == {ErrorType.EXCEPTION}


def test_logger_calls_at_error_and_warning_levels_with_percent_arguments() -> None:
    found = extract(
        """
        import logging

        logger = logging.getLogger(__name__)


        class Pool:
            def _close(self, connection, terminate):
                logger.debug("Closing connection %r quietly", connection)
                logger.info("Connection %r is being closed", connection)
                self.logger.error(
                    f"Exception {'terminating' if terminate else 'closing'} "
                    f"connection %r",
                    connection,
                    exc_info=True,
                )
                log.warning("Pool size of %d reached, waiting", self.size)
                logger.exception("Error calling %s in on_commit()", connection)
                self.logger.critical("The pool %s is disposed of", self)
                self.errors.error("Not a logger, only a method named error")
                self.dialog.warning("A dialog box is not a logger either")
        """
    )
    assert [(s.template, s.error_type, s.severity, s.line, s.function) for s in found] == [
        (
            "Exception {'terminating' if terminate else 'closing'} connection %r",
            ErrorType.LOG,
            Severity.ERROR,
            10,
            "Pool._close",
        ),
        ("Pool size of %d reached, waiting", ErrorType.LOG, Severity.WARNING, 16, "Pool._close"),
        ("Error calling %s in on_commit()", ErrorType.LOG, Severity.ERROR, 17, "Pool._close"),
        ("The pool %s is disposed of", ErrorType.LOG, Severity.ERROR, 18, "Pool._close"),
    ]
    assert found[1].notation is Notation.PYTHON_PERCENT
    assert {s.error_class for s in found} == {None}


def test_warnings_warn_and_sqlalchemy_util_warn_with_a_code() -> None:
    found = extract(
        """
        import warnings

        from .. import util
        from ..util import warn


        def connect(url, pool):
            warnings.warn(
                "Normally Django will use a connection to the 'postgres' database.",
                RuntimeWarning,
            )
            util.warn_deprecated(
                "Selection of the %s pool class based on the 'mode=memory' "
                "query string argument is deprecated" % pool,
                "2.0",
                code="sqmp",
            )
            warn("At least one scoped session is already present.")
            util.warn_limited(
                "Flushing object %s with incompatible polymorphic identity %r",
                (url, pool),
            )
            util.warn("Not formatted: 100%s literal", pool)
        """
    )
    assert [(s.template, s.error_type, s.severity, s.error_code) for s in found] == [
        (
            "Normally Django will use a connection to the 'postgres' database.",
            ErrorType.LOG,
            Severity.WARNING,
            None,
        ),
        (
            "Selection of the %s pool class based on the 'mode=memory' query string argument "
            "is deprecated",
            ErrorType.ERROR_CODE,
            Severity.WARNING,
            "sqmp",
        ),
        ("At least one scoped session is already present.", ErrorType.LOG, Severity.WARNING, None),
        (
            "Flushing object %s with incompatible polymorphic identity %r",
            ErrorType.LOG,
            Severity.WARNING,
            None,
        ),
        ("Not formatted: 100%s literal", ErrorType.LOG, Severity.WARNING, None),
    ]
    assert [s.notation for s in found[3:]] == [Notation.PYTHON_PERCENT, Notation.PLAIN]


def test_an_error_code_makes_the_kind_error_code() -> None:
    site = one(
        """
        def begin(self):
            raise exc.PendingRollbackError(
                "Can't reconnect until invalid %stransaction is rolled back."
                % ("savepoint " if self._nested else ""),
                code="8s2b",
            )
        """
    )
    assert (site.error_type, site.error_code, site.error_class) == (
        ErrorType.ERROR_CODE,
        "8s2b",
        "PendingRollbackError",
    )
    assert site.template == "Can't reconnect until invalid %stransaction is rolled back."


def test_a_message_held_in_a_variable_is_followed_through_assignments() -> None:
    found = extract(
        """
        def compile(self, element, kw):
            msg = "Don't know how to render %s construct" % element
            if kw:
                msg += "; keywords given: %s" % kw
            raise CompileError(msg)


        def bind(self, key, args):
            message = "Bind parameter '%s' conflicts with unique bind parameter"
            raise CompileError(message % key)


        def render(self, name):
            template = "Column {!r} has no default for table {}"
            raise ValueError(template.format(name, self.table))
        """
    )
    assert sorted((s.template, s.line, s.function, s.notation) for s in found) == [
        ("Bind parameter '%s' conflicts with unique bind parameter", 10, "bind", "python-percent"),
        ("Column {!r} has no default for table {}", 15, "render", "python-format"),
        ("Don't know how to render %s construct", 5, "compile", "python-percent"),
        (
            "Don't know how to render %s construct; keywords given: %s",
            5,
            "compile",
            "python-percent",
        ),
    ]


def test_branches_give_a_variant_each_and_a_branch_that_returns_gives_none() -> None:
    found = extract(
        """
        def check(self, fields, strict):
            if self.frozen:
                message = "Unknown field(s) (%s) specified for %s"
                message %= (", ".join(fields), self.model.__name__)
                raise FieldError(message)
            if not fields:
                msg = "No fields were given to the form class"
                return None
            if strict:
                msg = "Unknown field(s) (%s) specified for the model" % fields
            elif self.partial:
                msg = "Partial form for %s may not name fields" % self
            else:
                msg = "Fields %s need an explicit widget" % fields
                for name in fields:
                    msg += " and %s" % name
            logger.error(msg)
            raise FieldError(msg)
        """
    )
    assert [(s.template, s.line, s.notation) for s in found] == [
        ("Unknown field(s) (%s) specified for %s", 5, Notation.PYTHON_PERCENT),
        ("Unknown field(s) (%s) specified for the model", 18, Notation.PYTHON_PERCENT),
        ("Partial form for %s may not name fields", 18, Notation.PYTHON_PERCENT),
        ("Fields %s need an explicit widget and %s", 18, Notation.PYTHON_PERCENT),
    ]


def test_one_variable_raised_twice_is_one_site_at_the_first_raise() -> None:
    found = extract(
        """
        def get(self, key):
            msg = "Could not locate column in row for column '%s'" % key
            if self.strict:
                raise NoSuchColumnError(msg)
            raise KeyError(msg)
        """
    )
    assert [(s.template, s.line, s.error_class) for s in found] == [
        ("Could not locate column in row for column '%s'", 4, "NoSuchColumnError")
    ]


def test_a_message_in_a_module_constant_or_an_enclosing_function_is_found() -> None:
    found = extract(
        """
        NOT_READY = "Apps aren't loaded yet; call django.setup() first."


        def get_models():
            raise AppRegistryNotReady(NOT_READY)


        def async_unsafe(message):
            def decorator(func):
                def inner(*args, **kwargs):
                    raise SynchronousOnlyOperation(message)

                return inner

            if callable(message):
                func = message
                message = "You cannot call this from an async context."
                return decorator(func)
            return decorator


        def takes(reason):
            raise ValueError(reason)
        """
    )
    assert [(s.template, s.line, s.function) for s in found] == [
        ("Apps aren't loaded yet; call django.setup() first.", 5, "get_models"),
        (
            "You cannot call this from an async context.",
            11,
            "async_unsafe.decorator.inner",
        ),
    ]


def test_gettext_wrapped_messages_and_validation_error_params() -> None:
    found = extract(
        """
        from django.utils.translation import gettext as _, gettext_lazy


        class URLValidator:
            message = gettext_lazy("Enter a valid URL.")

            def __call__(self, value, protocol):
                raise ValidationError(
                    _("Enter a valid %(protocol)s address."),
                    code="invalid",
                    params={"protocol": protocol},
                )

            def clean(self, value):
                raise ValidationError(
                    _("Ensure this value has at most %(max)d characters (it has %(n)d).")
                    % {"max": 10, "n": len(value)}
                )
                raise ValidationError(gettext_lazy("The inline value did not match."))
        """
    )
    assert [(s.template, s.notation, s.error_code) for s in found] == [
        ("Enter a valid %(protocol)s address.", Notation.PYTHON_PERCENT, "invalid"),
        (
            "Ensure this value has at most %(max)d characters (it has %(n)d).",
            Notation.PYTHON_PERCENT,
            None,
        ),
        ("The inline value did not match.", Notation.PLAIN, None),
    ]
    assert found[0].error_type is ErrorType.ERROR_CODE


def test_a_raise_inside_a_nested_function_or_method_is_named_by_its_path() -> None:
    found = extract(
        """
        class Registry:
            class Loader:
                def load(self, name):
                    def check(value):
                        raise LookupError("No installed app with label '%s'." % value)

                    return check
        """
    )
    assert [(s.function, s.line) for s in found] == [("Registry.Loader.load.check", 5)]


def test_percent_and_brace_escapes_stay_as_written_for_the_notation_to_read() -> None:
    found = extract(
        """
        def pct(value, name):
            raise ValueError("Expected a value of 0-100%%, got %s" % value)
            raise ValueError("Use {{name}} placeholders, not {}".format(name))
            raise ValueError("A literal 100% is printed as is here")
        """
    )
    assert [(s.template, s.notation) for s in found] == [
        ("Expected a value of 0-100%%, got %s", Notation.PYTHON_PERCENT),
        ("Use {{name}} placeholders, not {}", Notation.PYTHON_FORMAT),
        ("A literal 100% is printed as is here", Notation.PLAIN),
    ]


def test_messages_with_no_fixed_words_give_no_site() -> None:
    assert templates(
        """
            def fail(self, error, a, b):
                raise ValueError(str(error))
                raise ValueError("%s: %s" % (a, b))
                raise ValueError(f"{a}: {b}")
                raise ValueError(error.args[0])
                raise ValueError
                raise
                logger.error(error)
                warnings.warn(self.message, RuntimeWarning)
                raise ValueError("Only this one has words: %s" % error)
            """
    ) == ["Only this one has words: %s"]


def test_sites_with_fewer_than_eight_literal_characters_are_dropped() -> None:
    assert MIN_LITERAL_CHARS == 8
    assert literal_chars("bad %s", Notation.PYTHON_PERCENT) == 3
    assert literal_chars("100% sure", Notation.PLAIN) == 9
    assert literal_chars("100% sure", Notation.PYTHON_PERCENT) == 6
    assert literal_chars("%s has no %s.", Notation.PYTHON_PERCENT) == 8
    assert literal_chars(" %s: no value ", Notation.PYTHON_PERCENT) == 10
    assert templates(
        """
        def short(a, b):
            raise ValueError("bad %s" % a)
            raise ValueError("1234567{}".format(b))
            raise ValueError("12345678{}".format(b))
            raise ValueError("%s has no %s." % (a, b))
            raise ValueError("  %s has no  " % a)
        """
    ) == ["12345678{}", "%s has no %s."]


def test_code_in_comments_and_strings_and_http_response_bodies_are_not_sites() -> None:
    assert templates(
        '''
            def view(request):
                """Raises ``ValueError("this is documentation, not code")``."""
                # raise ValueError("a commented-out raise is not a site")
                text = 'raise ValueError("a string that reads like code")'
                if request is None:
                    return HttpResponseServerError("<h1>Server Error (500)</h1>")
                raise Http404("No page matches the given query.")
            '''
    ) == ["No page matches the given query."]


def test_raise_from_and_a_message_keyword_argument() -> None:
    found = extract(
        """
        def parse(value):
            try:
                return int(value)
            except ValueError as error:
                raise TemplateSyntaxError("Invalid integer literal in tag") from error
            raise UnmappedInstanceError(value, msg="Class is not mapped to a table")
        """
    )
    assert [(s.template, s.line) for s in found] == [
        ("Invalid integer literal in tag", 5),
        ("Class is not mapped to a table", 6),
    ]


def test_a_file_that_does_not_parse_still_gives_the_sites_of_its_whole_statements() -> None:
    found = extract(
        """
        def ok(self):
            raise RuntimeError("The registry is not ready for lookups yet")


        def broken(self:
            raise RuntimeError("half a function
        """
    )
    assert [s.template for s in found][:1] == ["The registry is not ready for lookups yet"]


def test_hostile_nesting_and_long_chains_never_exhaust_the_stack() -> None:
    terms = " + ".join(f'"part {index} "' if index % 2 else "value" for index in range(3000))
    parens = "(" * 2000 + '"deeply parenthesised message"' + ")" * 2000
    ifs = "".join("    " * depth + "if value:\n" for depth in range(1, 200))
    source = (
        f"def chain(value):\n    raise ValueError({terms})\n\n\n"
        f"def parens(value):\n    raise ValueError({parens})\n\n\n"
        f"def nested(value):\n    msg = 'A message set before the blocks'\n{ifs}"
        + "    " * 200
        + "raise ValueError(msg)\n"
    )
    found = sites("lib/pkg/hostile.py", source)
    assert found[0].template.startswith("{}part 1 {}part 3 {}part 5 ")
    assert found[0].template.count("{}") == 1500
    # Past the nesting read, an expression counts as not literal (no site for parens) and
    # a variable keeps the value it had at the last block read.
    assert [(site.function, site.line) for site in found[1:]] == [("nested", 210)]
    assert found[1].template == "A message set before the blocks"


def test_variable_following_stops_at_the_file_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    filler = "".join(f"    step_{index} = key + {index}\n" for index in range(10))
    source = (
        "".join(
            f"def lookup_{index}(key):\n    msg = 'No entry number {index} in the registry'\n"
            + filler
            + "    raise KeyError(msg)\n\n\n"
            for index in range(40)
        )
        + "def last():\n    raise KeyError('A literal message needs no following')\n"
    )
    assert len(sites("lib/pkg/big.py", source)) == 41
    monkeypatch.setattr(python, "MAX_FLOW_STEPS", 30)
    # Each lookup steps through the dozen statements before its raise: the budget runs out
    # after two, the rest of the file's variables are left unfollowed; literals need none.
    found = sites("lib/pkg/big.py", source)
    assert [s.template for s in found] == [
        "No entry number 0 in the registry",
        "No entry number 1 in the registry",
        "A literal message needs no following",
    ]


def test_escapes_python_would_refuse_or_a_database_cannot_hold_stay_as_written() -> None:
    assert templates(
        r"""
        def decode(value):
            raise ValueError("Tab\there, e\u0301 and \N{BULLET} decoded; \x41 too")
            raise ValueError("Kept: \UFFFFFFFF, \ud800, \0 and \N{NO SUCH NAME}")
        """
    ) == [
        "Tab\there, e\u0301 and \N{BULLET} decoded; A too",
        r"Kept: \UFFFFFFFF, \ud800, \0 and \N{NO SUCH NAME}",
    ]
    # The grammar has no NUL in a string: a raw one is a syntax error, read past.
    assert templates(
        'raise ValueError("A raw \x00 byte in the file")\nraise ValueError("The next line is read")'
    ) == ["The next line is read"]


def test_a_module_constant_read_by_many_functions_is_looked_up_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = "".join(
        f"def get_{index}(key):\n    raise KeyError(NOT_FOUND % key)\n\n\n" for index in range(40)
    )
    source += "NOT_FOUND = 'No entry named %r in the registry'\n"
    # The module's statements are stepped through once, not once per function: the 40
    # reads fit a budget far smaller than 40 walks of the module.
    monkeypatch.setattr(python, "MAX_FLOW_STEPS", 100)
    found = sites("lib/pkg/registry.py", source)
    assert len(found) == 40
    assert {(s.template, s.notation) for s in found} == {
        ("No entry named %r in the registry", Notation.PYTHON_PERCENT)
    }
