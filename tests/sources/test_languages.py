# ruff: noqa: E501 - the repositories' files and their expected sites read best one per line
"""Learning a small real git repository per language, end to end.

Each repository (built in the test: a few commits, release tags, a test file and a file
committed after the tag learned) holds the constructs issue 25 lists for its language and
the tricky ones: calls over several lines, concatenation across lines, positional and
named format arguments, a message held in a constant, a raise inside a nested function.
It is learned through the service the command and the worker run (``execute_learn``), and
the records are read back from the database: message, pattern, kind, severity, class,
file and line, the snippet window, the link at the commit (from a GitHub ``origin``
remote, none without one), tags, and a realistic pasted line of that language matched by
the real matcher. Then a commit moves sites down and edits an unrelated function: the
re-learn keeps every record id and moves the line numbers.

Runs on SQLite and on PostgreSQL (DATABASE_URL).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kb.extract.records import CONTEXT_LINES
from kb.matching.holder import match_text
from kb.records.models import ErrorRecord
from kb.sources.models import LearnedSite, LearnJob, Source
from kb.sources.tasks import execute_learn
from tests.sources.support import GitRepo

pytestmark = pytest.mark.django_db

REMOTE = "https://github.com/acme/widgets.git"
PAGE = "https://github.com/acme/widgets"
MOVED_BY = 4  # comment lines the second release inserts before `Lang.move_at`


@dataclass(frozen=True)
class Expected:
    """One site the extraction must find: where its call starts (the first line holding
    ``at``), and what its record says."""

    at: str
    message: str
    error_type: str
    severity: str
    error_class: str | None = None


@dataclass(frozen=True)
class Lang:
    name: str
    path: str  # the file with the sites
    text: str
    sites: list[Expected]
    patterns: dict[str, str]  # message -> messagePattern, for the tricky ones
    paste: str  # a realistic log line / traceback of the language, values filled in
    pasted: str  # the message of the record the paste must match
    move_at: str  # comment lines are inserted before the first line holding this
    unrelated: tuple[str, str]  # an edit of a function with no site (same line count)
    comment: str
    remote: bool
    tagged: dict[str, list[str]] = field(default_factory=dict)  # message -> record tags
    helper: tuple[str, str] = ("", "")  # a second file, unchanged between releases
    test_file: tuple[str, str] = ("", "")  # test code: skipped by default
    later: tuple[str, str] = ("", "")  # committed after the tag learned: not learned


PYTHON = Lang(
    name="python",
    path="widgets/assemble.py",
    text='''"""Assembling widgets."""

import logging
import warnings

logger = logging.getLogger(__name__)

NOT_READY = "the widget factory is not ready yet"


class WidgetError(Exception):
    pass


def describe():
    return "widgets"


def assemble(name, count):
    if count < 0:
        raise ValueError("negative widget count %d for %s" % (count, name))
    if not name:
        raise WidgetError("widget {} has no name in batch {}".format(count, name))
    if count == 3:
        raise WidgetError("widget {name} needs {parts} more parts".format(name=name, parts=count))
    if count > 100:
        raise OverflowError(f"too many widgets requested: {count} > 100")
    if count == 7:
        raise KeyError(
            "unlucky widget number "
            "cannot be assembled here"
        )
    if count == 8:
        raise RuntimeError(
            "widget %(name)s failed with code %(code)d"
            % {"name": name, "code": count}
        )
    if count == 9:
        raise RuntimeError(NOT_READY)
    logger.error("widget assembly failed for %s after %d tries", name, count)
    logger.exception("unexpected crash while assembling %s", name)
    logger.warning("widget %s is running low on parts", name)
    logging.critical("widget store is corrupted at %s", name)
    warnings.warn("assemble() with a count of zero is deprecated", DeprecationWarning)

    def check(part):
        raise LookupError(f"part {part} is missing from widget {name}")

    return check
''',
    sites=[
        Expected(
            'raise ValueError("negative',
            "negative widget count %d for %s",
            "exception",
            "error",
            "ValueError",
        ),
        Expected(
            'raise WidgetError("widget {}',
            "widget {} has no name in batch {}",
            "exception",
            "error",
            "WidgetError",
        ),
        Expected(
            'raise WidgetError("widget {name}',
            "widget {name} needs {parts} more parts",
            "exception",
            "error",
            "WidgetError",
        ),
        Expected(
            "raise OverflowError",
            "too many widgets requested: {count} > 100",
            "exception",
            "error",
            "OverflowError",
        ),
        Expected(
            "raise KeyError(",
            "unlucky widget number cannot be assembled here",
            "exception",
            "error",
            "KeyError",
        ),
        Expected(
            "raise RuntimeError(\n",
            "widget %(name)s failed with code %(code)d",
            "exception",
            "error",
            "RuntimeError",
        ),
        Expected(
            "raise RuntimeError(NOT_READY)",
            "the widget factory is not ready yet",
            "exception",
            "error",
            "RuntimeError",
        ),
        Expected("logger.error(", "widget assembly failed for %s after %d tries", "log", "error"),
        Expected("logger.exception(", "unexpected crash while assembling %s", "log", "error"),
        Expected("logger.warning(", "widget %s is running low on parts", "log", "warning"),
        Expected("logging.critical(", "widget store is corrupted at %s", "log", "error"),
        Expected(
            "warnings.warn(", "assemble() with a count of zero is deprecated", "log", "warning"
        ),
        Expected(
            "raise LookupError",
            "part {part} is missing from widget {name}",
            "exception",
            "error",
            "LookupError",
        ),
    ],
    patterns={
        "negative widget count %d for %s": "negative widget count (.+?) for (.+?)",
        "widget %(name)s failed with code %(code)d": "widget (.+?) failed with code (.+?)",
        "widget {name} needs {parts} more parts": "widget (.+?) needs (.+?) more parts",
        "assemble() with a count of zero is deprecated": r"assemble\(\) with a count of zero is deprecated",
    },
    paste="""Traceback (most recent call last):
  File "/srv/app/main.py", line 12, in <module>
    assemble("sprocket", 8)
  File "/srv/app/widgets/assemble.py", line 35, in assemble
    raise RuntimeError(
RuntimeError: widget sprocket failed with code 8
""",
    pasted="widget %(name)s failed with code %(code)d",
    move_at="    if count > 100:",
    unrelated=('    return "widgets"', '    return "gadgets"'),
    comment="#",
    remote=True,
    tagged={
        "negative widget count %d for %s": ["widgets", "negative", "widget", "invalid-input"],
        "part {part} is missing from widget {name}": ["widgets", "part", "missing", "not-found"],
    },
    helper=(
        "widgets/helpers.py",
        'def fine():\n    raise ValueError("a helper always fails here")\n',
    ),
    test_file=(
        "tests/test_assemble.py",
        'def test():\n    raise ValueError("only in a test file")\n',
    ),
    later=(
        "widgets/later.py",
        'def later():\n    raise ValueError("a failure after the release")\n',
    ),
)

GO = Lang(
    name="go",
    path="widgets/assemble.go",
    text="""package widgets

import (
	"errors"
	"fmt"
	"log"

	pkgerrors "github.com/pkg/errors"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

var ErrNoWidget = errors.New("widget not found in the registry")

const notReady = "the widget factory is not ready yet"

func Describe() string {
	return "widgets"
}

func Assemble(name string, count int, logger *zap.Logger) error {
	validate := func(part string) error {
		return fmt.Errorf("part %s is missing from widget %s", part, name)
	}
	if count < 0 {
		return fmt.Errorf("negative widget count %d for %q", count, name)
	}
	if err := validate(name); err != nil {
		return fmt.Errorf("cannot assemble widget %s: %w", name, err)
	}
	if count > 100 {
		return status.Errorf(codes.InvalidArgument, "too many widgets requested: %d", count)
	}
	if count == 7 {
		return pkgerrors.Wrapf(ErrNoWidget, "lookup of widget %s failed", name)
	}
	if count == 8 {
		log.Fatalf("widget store is corrupted at %s", name)
	}
	if count == 9 {
		log.Panicf("widget registry lost entry %d", count)
	}
	if count == 10 {
		return errors.New("widget " + name +
			" has no parts left in stock")
	}
	if count == 11 {
		return fmt.Errorf("widget %[1]s needs %[2]d more parts (have %[2]d)",
			name,
			count,
		)
	}
	log.Printf("warning: widget %s is running low on parts", name)  // a level in its words
	logger.Error("failed to reserve widget parts", zap.String("name", name))
	logger.Warn("widget queue is getting long", zap.Int("count", count))
	klog.Errorf("widget controller could not sync %s: %v", name,
		count)
	klog.Warningf("widget controller is slow for %s", name)
	if count == 12 {
		panic(fmt.Sprintf("widget invariant broken for %s", name))
	}
	if count == 13 {
		return errors.New(notReady)
	}
	return nil
}
""",
    sites=[
        Expected(
            "var ErrNoWidget",
            "widget not found in the registry",
            "error_return",
            "error",
            "ErrNoWidget",
        ),
        Expected('fmt.Errorf("part', "part %s is missing from widget %s", "error_return", "error"),
        Expected(
            'fmt.Errorf("negative', "negative widget count %d for %q", "error_return", "error"
        ),
        Expected('fmt.Errorf("cannot', "cannot assemble widget %s: %w", "error_return", "error"),
        Expected(
            "status.Errorf", "too many widgets requested: %d", "error_code", "error", "status.Error"
        ),
        Expected("pkgerrors.Wrapf", "lookup of widget %s failed", "error_return", "error"),
        Expected("log.Fatalf", "widget store is corrupted at %s", "log", "fatal"),
        Expected("log.Panicf", "widget registry lost entry %d", "panic", "fatal"),
        Expected(
            'errors.New("widget " +',
            "widget {} has no parts left in stock",
            "error_return",
            "error",
        ),
        Expected(
            'fmt.Errorf("widget %[1]s',
            "widget %[1]s needs %[2]d more parts (have %[2]d)",
            "error_return",
            "error",
        ),
        Expected("log.Printf", "warning: widget %s is running low on parts", "log", "warning"),
        Expected("logger.Error", "failed to reserve widget parts", "log", "error"),
        Expected("logger.Warn", "widget queue is getting long", "log", "warning"),
        Expected("klog.Errorf", "widget controller could not sync %s: %v", "log", "error"),
        Expected("klog.Warningf", "widget controller is slow for %s", "log", "warning"),
        Expected("panic(fmt.Sprintf", "widget invariant broken for %s", "panic", "fatal"),
        Expected(
            "errors.New(notReady)", "the widget factory is not ready yet", "error_return", "error"
        ),
    ],
    patterns={
        "cannot assemble widget %s: %w": "cannot assemble widget (.+?): (.+?)",
        "widget {} has no parts left in stock": "widget (.+?) has no parts left in stock",
        "widget %[1]s needs %[2]d more parts (have %[2]d)": r"widget (.+?) needs (.+?) more parts \(have (.+?)\)",
    },
    paste=(
        "E0102 10:00:00.123456   4242 controller.go:57] widget controller could not sync "
        "sprocket: 7\n"
    ),
    pasted="widget controller could not sync %s: %v",
    move_at="	if count > 100 {",
    unrelated=('	return "widgets"', '	return "gadgets"'),
    comment="//",
    remote=False,
    tagged={"cannot assemble widget %s: %w": ["widgets", "assemble", "widget"]},
    helper=(
        "widgets/helpers.go",
        'package widgets\n\nimport "errors"\n\nvar ErrHelper = errors.New("a helper always fails here")\n',
    ),
    test_file=(
        "widgets/assemble_test.go",
        'package widgets\n\nimport "errors"\n\nvar errTest = errors.New("only in a test file")\n',
    ),
    later=(
        "widgets/later.go",
        'package widgets\n\nimport "errors"\n\nvar ErrLater = errors.New("a failure after the release")\n',
    ),
)

RUST = Lang(
    name="rust",
    path="src/widgets.rs",
    text="""use anyhow::{anyhow, bail, ensure, Context, Result};
use thiserror::Error;
use tracing::{error, warn};

const NOT_READY: &str = "the widget factory is not ready yet";

#[derive(Debug, Error)]
pub enum WidgetError {
    #[error("widget {0} not found in the registry")]
    NotFound(String),
    #[error("widget {name} has too many parts: {count}")]
    TooManyParts { name: String, count: usize },
}

#[derive(Debug, Error)]
#[error("widget store is corrupted at offset {offset}")]
pub struct CorruptStore {
    offset: u64,
}

pub fn describe() -> &'static str {
    "widgets"
}

pub fn assemble(name: &str, count: usize) -> Result<()> {
    fn check(part: &str) -> Result<()> {
        bail!("part {} is missing from the widget", part)
    }
    if count == 0 {
        bail!("cannot assemble widget {} with no parts", name);
    }
    ensure!(count < 100, "too many widgets requested: {count}");
    if count == 7 {
        return Err(anyhow!("unlucky widget number {:?} for {}", count, name));
    }
    let data = std::fs::read(name).context("failed to read the widget manifest")?;
    let parsed = parse(&data).with_context(|| {
        format!(
            "failed to parse the widget manifest of {}",
            name
        )
    })?;
    let first = parsed.first().expect("the widget manifest has no entries");
    let ready = parsed.get(1).context(NOT_READY)?;
    if *first == 9 {
        panic!("widget invariant broken for {name}");
    }
    if *first == 10 {
        unreachable!("widget kind {} was filtered out before", first);
    }
    if *first == 11 {
        todo!("recycling of widget {} is not written yet", name);
    }
    error!("widget assembly failed for {} after {} tries", name, count);
    warn!(count, "widget queue is getting long for {}", name);
    if *ready == 12 {
        bail!(NOT_READY);
    }
    check(name)
}

fn label(name: &str) -> Result<String, String> {
    if name.is_empty() {
        return Err(format!("widget label {} is empty or invalid", name));
    }
    if name.len() > 40 {
        return Err("widget label is far too long".into());
    }
    Ok(name.to_string())
}

fn parse(data: &[u8]) -> Result<Vec<u8>, WidgetError> {
    if data.is_empty() {
        return Err(WidgetError::NotFound("empty".to_string()));
    }
    Ok(data.to_vec())
}
""",
    sites=[
        Expected(
            '#[error("widget {0}',
            "widget {0} not found in the registry",
            "error_return",
            "error",
            "WidgetError::NotFound",
        ),
        Expected(
            '#[error("widget {name}',
            "widget {name} has too many parts: {count}",
            "error_return",
            "error",
            "WidgetError::TooManyParts",
        ),
        Expected(
            '#[error("widget store',
            "widget store is corrupted at offset {offset}",
            "error_return",
            "error",
            "CorruptStore",
        ),
        Expected('bail!("part', "part {} is missing from the widget", "error_return", "error"),
        Expected(
            'bail!("cannot', "cannot assemble widget {} with no parts", "error_return", "error"
        ),
        Expected("ensure!(", "too many widgets requested: {count}", "error_return", "error"),
        Expected("anyhow!(", "unlucky widget number {:?} for {}", "error_return", "error"),
        Expected('.context("failed', "failed to read the widget manifest", "error_return", "error"),
        Expected(
            ".with_context(", "failed to parse the widget manifest of {}", "error_return", "error"
        ),
        Expected(".expect(", "the widget manifest has no entries", "panic", "fatal"),
        Expected(
            ".context(NOT_READY)", "the widget factory is not ready yet", "error_return", "error"
        ),
        Expected("panic!(", "widget invariant broken for {name}", "panic", "fatal"),
        Expected("unreachable!(", "widget kind {} was filtered out before", "panic", "fatal"),
        Expected("todo!(", "recycling of widget {} is not written yet", "panic", "fatal"),
        Expected("error!(", "widget assembly failed for {} after {} tries", "log", "error"),
        Expected("warn!(", "widget queue is getting long for {}", "log", "warning"),
        # `bail!(NOT_READY)` (a macro's message in a constant) gives no site: only a
        # method's argument (`.context(NOT_READY)` above) is followed to its constant.
        Expected(
            "return Err(format!", "widget label {} is empty or invalid", "error_return", "error"
        ),
        Expected('Err("widget label', "widget label is far too long", "error_return", "error"),
    ],
    patterns={
        "widget {name} has too many parts: {count}": "widget (.+?) has too many parts: (.+?)",
        "unlucky widget number {:?} for {}": "unlucky widget number (.+?) for (.+?)",
        "widget {0} not found in the registry": "widget (.+?) not found in the registry",
    },
    paste=(
        "thread 'tokio-runtime-worker' panicked at src/widgets.rs:46:9:\n"
        "widget invariant broken for sprocket\n"
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
    ),
    pasted="widget invariant broken for {name}",
    move_at="    if *first == 9 {",
    unrelated=('    "widgets"', '    "gadgets"'),
    comment="//",
    remote=True,
    tagged={"widget invariant broken for {name}": ["widgets", "widget", "broken", "invariant"]},
    helper=("src/helpers.rs", 'pub fn fine() {\n    panic!("a helper always fails here");\n}\n'),
    test_file=("tests/widgets.rs", '#[test]\nfn t() {\n    panic!("only in a test file");\n}\n'),
    later=("src/later.rs", 'pub fn later() {\n    panic!("a failure after the release");\n}\n'),
)

JAVA = Lang(
    name="java",
    path="src/main/java/com/acme/widgets/Widgets.java",
    text="""package com.acme.widgets;

import java.text.MessageFormat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public class Widgets {
    private static final Logger log = LoggerFactory.getLogger(Widgets.class);
    private static final String NOT_READY = "the widget factory is not ready yet";

    public String describe() {
        return "widgets";
    }

    public void assemble(String name, int count) {
        if (count < 0) {
            throw new IllegalArgumentException("negative widget count " + count + " for " + name);
        }
        if (count > 100) {
            throw new IllegalStateException(
                String.format("too many widgets requested: %d > %d", count, 100));
        }
        if (count == 7) {
            throw new WidgetException(MessageFormat.format("widget {0} failed in batch {1}", name, count));
        }
        if (count == 8) {
            throw new WidgetException("unlucky widget number " + count
                + " cannot be assembled for " + name);
        }
        if (count == 9) {
            throw new IllegalStateException(NOT_READY);
        }
        log.error("widget assembly failed for {} after {} tries", name, count);
        log.warn("widget {} is running low on parts", name);
        Runnable check = () -> {
            throw new UnsupportedOperationException("recycling of widget " + name + " is not supported");
        };
        check.run();
    }
}
""",
    sites=[
        Expected(
            "throw new IllegalArgumentException",
            "negative widget count {} for {}",
            "exception",
            "error",
            "IllegalArgumentException",
        ),
        Expected(
            "throw new IllegalStateException(\n",
            "too many widgets requested: %d > %d",
            "exception",
            "error",
            "IllegalStateException",
        ),
        Expected(
            "MessageFormat.format",
            "widget {0} failed in batch {1}",
            "exception",
            "error",
            "WidgetException",
        ),
        Expected(
            'throw new WidgetException("unlucky',
            "unlucky widget number {} cannot be assembled for {}",
            "exception",
            "error",
            "WidgetException",
        ),
        Expected(
            "throw new IllegalStateException(NOT_READY)",
            "the widget factory is not ready yet",
            "exception",
            "error",
            "IllegalStateException",
        ),
        Expected("log.error(", "widget assembly failed for {} after {} tries", "log", "error"),
        Expected("log.warn(", "widget {} is running low on parts", "log", "warning"),
        Expected(
            "throw new UnsupportedOperationException",
            "recycling of widget {} is not supported",
            "exception",
            "error",
            "UnsupportedOperationException",
        ),
    ],
    patterns={
        "negative widget count {} for {}": "negative widget count (.+?) for (.+?)",
        "too many widgets requested: %d > %d": "too many widgets requested: (.+?) > (.+?)",
        "widget {0} failed in batch {1}": "widget (.+?) failed in batch (.+?)",
    },
    paste=(
        'Exception in thread "main" java.lang.IllegalArgumentException: negative widget count '
        "-3 for sprocket\n"
        "\tat com.acme.widgets.Widgets.assemble(Widgets.java:17)\n"
        "\tat com.acme.widgets.Main.main(Main.java:9)\n"
    ),
    pasted="negative widget count {} for {}",
    move_at="        if (count > 100) {",
    unrelated=('        return "widgets";', '        return "gadgets";'),
    comment="//",
    remote=False,
    tagged={"negative widget count {} for {}": ["widgets", "negative", "widget", "invalid-input"]},
    helper=(
        "src/main/java/com/acme/widgets/Helpers.java",
        'package com.acme.widgets;\n\nclass Helpers {\n    void fine() {\n        throw new IllegalStateException("a helper always fails here");\n    }\n}\n',
    ),
    test_file=(
        "src/test/java/com/acme/widgets/WidgetsTest.java",
        'package com.acme.widgets;\n\nclass WidgetsTest {\n    void t() {\n        throw new IllegalStateException("only in a test file");\n    }\n}\n',
    ),
    later=(
        "src/main/java/com/acme/widgets/Later.java",
        'package com.acme.widgets;\n\nclass Later {\n    void later() {\n        throw new IllegalStateException("a failure after the release");\n    }\n}\n',
    ),
)

SCALA = Lang(
    name="scala",
    path="core/src/main/scala/com/acme/widgets/Widgets.scala",
    text="""package com.acme.widgets

import com.typesafe.scalalogging.Logger

object Widgets {
  private val logger = Logger(getClass)
  val NotReady = "the widget factory is not ready yet"

  def describe(): String = {
    "widgets"
  }

  def assemble(name: String, count: Int): Unit = {
    if (count < 0)
      throw new IllegalArgumentException(s"negative widget count $count for $name")
    if (count > 100)
      throw new IllegalStateException(s"too many widgets requested: ${count} > 100")
    if (count == 7)
      throw new WidgetException("unlucky widget number " + count +
        " cannot be assembled for " + name)
    if (count == 8)
      throw new IllegalStateException("widget %s failed with code %d".format(name, count))
    if (count == 9)
      throw new IllegalStateException(NotReady)
    logger.error(s"widget assembly failed for $name after $count tries")
    logger.warn(s"widget $name is running low on parts")
    def check(part: String): Unit =
      throw new NoSuchElementException(s"part $part is missing from widget $name")
    check(name)
  }
}
""",
    sites=[
        Expected(
            "throw new IllegalArgumentException",
            "negative widget count $count for $name",
            "exception",
            "error",
            "IllegalArgumentException",
        ),
        Expected(
            'throw new IllegalStateException(s"too',
            "too many widgets requested: ${count} > 100",
            "exception",
            "error",
            "IllegalStateException",
        ),
        Expected(
            "throw new WidgetException",
            "unlucky widget number {} cannot be assembled for {}",
            "exception",
            "error",
            "WidgetException",
        ),
        Expected(
            'throw new IllegalStateException("widget',
            "widget %s failed with code %d",
            "exception",
            "error",
            "IllegalStateException",
        ),
        Expected(
            "throw new IllegalStateException(NotReady)",
            "the widget factory is not ready yet",
            "exception",
            "error",
            "IllegalStateException",
        ),
        Expected(
            "logger.error(", "widget assembly failed for $name after $count tries", "log", "error"
        ),
        Expected("logger.warn(", "widget $name is running low on parts", "log", "warning"),
        Expected(
            "throw new NoSuchElementException",
            "part $part is missing from widget $name",
            "exception",
            "error",
            "NoSuchElementException",
        ),
    ],
    patterns={
        "negative widget count $count for $name": "negative widget count (.+?) for (.+?)",
        "too many widgets requested: ${count} > 100": "too many widgets requested: (.+?) > 100",
        "unlucky widget number {} cannot be assembled for {}": "unlucky widget number (.+?) cannot be assembled for (.+?)",
    },
    paste=(
        "2026-01-02 10:00:00,123 ERROR [main] KafkaApis - request failed\n"
        "java.util.NoSuchElementException: part wheel is missing from widget sprocket\n"
        "\tat com.acme.widgets.Widgets$.check$1(Widgets.scala:28)\n"
        "\tat com.acme.widgets.Widgets$.assemble(Widgets.scala:29)\n"
    ),
    pasted="part $part is missing from widget $name",
    move_at="    if (count > 100)",
    unrelated=('    "widgets"', '    "gadgets"'),
    comment="//",
    remote=True,
    tagged={"part $part is missing from widget $name": ["widgets", "part", "missing", "not-found"]},
    helper=(
        "core/src/main/scala/com/acme/widgets/Helpers.scala",
        'package com.acme.widgets\n\nobject Helpers {\n  def fine(): Unit = throw new IllegalStateException("a helper always fails here")\n}\n',
    ),
    test_file=(
        "core/src/test/scala/com/acme/widgets/WidgetsTest.scala",
        'package com.acme.widgets\n\nobject WidgetsTest {\n  def t(): Unit = throw new IllegalStateException("only in a test file")\n}\n',
    ),
    later=(
        "core/src/main/scala/com/acme/widgets/Later.scala",
        'package com.acme.widgets\n\nobject Later {\n  def later(): Unit = throw new IllegalStateException("a failure after the release")\n}\n',
    ),
)

LANGS = [PYTHON, GO, RUST, JAVA, SCALA]
HELPER_MESSAGE = "a helper always fails here"


def _line_of(text: str, at: str) -> int:
    """The 1-based line on which ``at`` starts (its first occurrence)."""
    index = text.index(at)
    return text.count("\n", 0, index) + 1


def _moved(lang: Lang) -> str:
    """The second release: comment lines before ``move_at``, an unrelated function edited."""
    lines = lang.text.split("\n")
    at = _line_of(lang.text, lang.move_at) - 1
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    inserted = [f"{indent}{lang.comment} a note moving what follows down"] * MOVED_BY
    text = "\n".join([*lines[:at], *inserted, *lines[at:]])
    old, new = lang.unrelated
    assert text.count(old) == 1
    return text.replace(old, new)


def _build(lang: Lang, root: Path) -> tuple[GitRepo, dict[str, str]]:
    """The repository: a first commit with the helper only, release v1.0 with the sites
    (and a test file), release v1.1 moving them, then an unreleased commit."""
    repo = GitRepo(root / "widgets")
    if lang.remote:
        repo.git("remote", "add", "origin", REMOTE)
    repo.write(*lang.helper)
    shas = {"v0.9": repo.commit("helpers", tag="v0.9")}
    repo.write(lang.path, lang.text)
    repo.write(*lang.test_file)
    shas["v1.0"] = repo.commit("widgets", tag="v1.0")
    repo.write(lang.path, _moved(lang))
    shas["v1.1"] = repo.commit("a note, and describe says gadgets", tag="v1.1")
    repo.write(*lang.later)
    shas["HEAD"] = repo.commit("not released yet")
    return repo, shas


def _learn(source: Source, revision: str) -> LearnJob:
    """Learn ``source`` at ``revision`` the way the worker's task and the command do."""
    source.revision = revision
    source.save()
    job, result = execute_learn(LearnJob.objects.create(source=source))
    assert result is not None, job.error
    assert job.state == LearnJob.State.DONE, job.error
    return job


def _records(source: Source) -> dict[str, ErrorRecord]:
    records = ErrorRecord.objects.filter(repo=source.repo)
    by_message = {r.error_message: r for r in records}
    assert len(by_message) == records.count()  # one record per message in these files
    return by_message


def _assert_source_fields(record: ErrorRecord, lang: Lang, text: str, line: int, sha: str) -> None:
    lines = text.split("\n")
    start, end = max(1, line - CONTEXT_LINES), min(len(lines), line + CONTEXT_LINES)
    where = f"{lang.name}: {record.error_message!r}"
    assert (record.file_path, record.line_number) == (lang.path, line), where
    assert (record.source_code_start, record.source_code_end) == (start, end), where
    assert record.source_code == "\n".join(lines[start - 1 : end]), where
    assert record.analyzed_sha == sha, where
    if lang.remote:
        assert record.github_url == f"{PAGE}/blob/{sha}/{lang.path}#L{start}-L{end}", where
    else:
        assert record.github_url == "", where


@pytest.mark.parametrize("lang", LANGS, ids=[lang.name for lang in LANGS])
def test_a_repository_of_each_language_is_learned_and_kept_in_step(
    lang: Lang, tmp_path: Path
) -> None:
    repo, shas = _build(lang, tmp_path)
    source = Source(location=str(repo.path))
    source.full_clean()
    source.save()

    first = _learn(source, "v1.0")

    assert (first.revision, first.since) == (shas["v1.0"], "")
    assert first.files_read == 2  # the sites' file and the helper; the test file skipped
    assert first.report["skipped"] == {"test": 1}
    records = _records(source)
    path_tag = next(iter(lang.tagged.values()))[0]  # every site of the file has it first
    expected = {site.message for site in lang.sites} | {HELPER_MESSAGE}
    assert set(records) == expected  # nothing from the test file or the unreleased commit
    for site in lang.sites:
        record = records[site.message]
        kind = (record.error_type, record.severity, record.error_class)
        assert kind == (site.error_type, site.severity, site.error_class), site.message
        _assert_source_fields(record, lang, lang.text, _line_of(lang.text, site.at), shas["v1.0"])
        assert record.status == "published"
        assert record.tags[0] == path_tag
    for message, pattern in lang.patterns.items():
        assert records[message].message_pattern == pattern, message
    for message, tags in lang.tagged.items():
        assert records[message].tags == tags, message
    for record in records.values():  # every pattern is anchored on its own literal words
        assert re.search(record.message_pattern, record.error_message.replace("\n", " "))

    answers = match_text(lang.paste).answers
    assert answers, lang.paste
    assert answers[0].record.pk == records[lang.pasted].pk

    # v1.1: sites from `move_at` on are MOVED_BY lines down, `describe` returns another word
    ids = {message: record.pk for message, record in records.items()}
    moved_text = _moved(lang)
    moved_from = _line_of(lang.text, lang.move_at)

    second = _learn(source, "v1.1")

    assert (second.revision, second.since) == (shas["v1.1"], shas["v1.0"])
    assert second.files_read == 1  # only the file that changed; the helper is not read
    assert (second.created, second.gone) == (0, 0)
    records = _records(source)
    assert {message: record.pk for message, record in records.items()} == ids
    moved = 0
    for site in lang.sites:
        old = _line_of(lang.text, site.at)
        new = _line_of(moved_text, site.at)
        assert new == old + (MOVED_BY if old >= moved_from else 0)
        moved += new != old
        _assert_source_fields(records[site.message], lang, moved_text, new, shas["v1.1"])
        learned = LearnedSite.objects.get(source=source, record_id=ids[site.message])
        assert (learned.line, learned.revision, learned.gone_since) == (new, shas["v1.1"], "")
    assert moved >= 2
    helper = records[HELPER_MESSAGE]
    assert helper.analyzed_sha == shas["v1.0"]  # its file was not read again
    answers = match_text(lang.paste).answers
    assert answers[0].record.pk == ids[lang.pasted]
