"""``kb.extract.rust`` on a real-looking Rust file holding every construct it reads.

No database: the extractor is pure. The expected sites were read off the source by hand:
the line where the macro, call or attribute starts, the message in Rust's notation, and
the kind, severity, class and code the dataset gives such a site.
"""

from __future__ import annotations

from kb.extract.extract import extract_file
from kb.extract.rust import MAX_DEPTH, sites
from kb.extract.sites import ErrorType, Notation, Severity

SOURCE = r"""use anyhow::{anyhow, bail, ensure, Context};
use thiserror::Error;
use tonic::{Code, Status};

const MISSING_SCHEMA: &str = "schema registry is not configured";

#[derive(Error, Debug)]
pub enum MetaErrorInner {
    #[error("Session parameters error: {0}")]
    SessionConfig(String),
    #[error(transparent)]
    Internal(anyhow::Error),
    #[error("catalog id not found: {kind} {id}")]
    CatalogIdNotFound { kind: &'static str, id: u32 },
}

#[derive(Error, Debug)]
#[error("feature {feature:?} is not available")]
pub struct FeatureNotAvailable {
    feature: String,
}

pub struct BackfillState {
    inner: HashMap<VirtualNode, Progress>,
}

impl BackfillState {
    pub fn get_progress(&self, vnode: &VirtualNode) -> StreamExecutorResult<&Progress> {
        match self.inner.get(vnode) {
            Some(p) => Ok(p),
            None => bail!(
            "Backfill progress for vnode {:#?} not found, backfill_state not initialized properly",
                vnode,
            ),
        }
    }

    fn parse_offset(&self, raw: &str) -> Result<u64, ConnectorError> {
        let offset = raw
            .parse::<u64>()
            .with_context(|| format!("invalid upstream offset: {}", raw))?;
        let file = self.file.as_ref().with_context(|| {
            format!("binlog file {name} not found in offset {offset}", name = self.name)
        })?;
        ensure!(file.len() == "x".len(), "only support single split, got {}", file.len());
        let schema = self.schema.as_ref().context(MISSING_SCHEMA)?;
        Ok(offset)
    }
}

pub fn bind_function(name: &str, args: &[Expr]) -> crate::error::Result<Expr> {
    fn check_arity(args: &[Expr]) -> Result<(), RwError> {
        if args.is_empty() {
            return Err(ErrorCode::InvalidInputSyntax(format!(
                "Function `{}` takes at least {} arguments ({} given)",
                "f", 1, args.len()
            ))
            .into());
        }
        Ok(())
    }
    let value = args.first().ok_or_else(|| anyhow!("function {name} needs an argument"))?;
    if name.len() > 63 {
        bail_not_implemented!(issue = 1234, "function name longer than {} bytes", 63);
    }
    match value {
        Expr::Literal(_) => Err(crate::error::ErrorCode::BindError(
            "literal arguments are not supported here".to_owned(),
        )
        .into()),
        _ => unreachable!("IdGenerator only supports Table and Fragment"),
    }
}

fn decode(buf: &[u8]) -> Result<String, String> {
    if buf.is_empty() {
        return Err("Array value must start with \"{\"".to_owned());
    }
    if buf.len() > 10 {
        return Err(format!("value {:?} out of range, expect {:?}", buf, 10));
    }
    let text = std::str::from_utf8(buf).expect("a checked buffer is always \
        valid UTF-8 {len}");
    let n = text.parse::<u32>().expect(&format!("not a number: {}", text));
    std::io::Error::new(std::io::ErrorKind::Other, "value too large to transmit");
    Ok(text.to_owned())
}

async fn serve(request: Request) -> Result<Response, Status> {
    let req = request.req.ok_or_else(|| Status::invalid_argument("get_stream request is empty"))?;
    if req.id == 0 {
        return Err(Status::new(Code::NotFound, "no such stream for this request"));
    }
    tokio::select! {
        _ = shutdown.recv() => bail!("shutting down the stream service"),
        msg = stream.next() => {
            let msg = msg.expect("stream is infinite and never ends");
            Err(format!("unexpected message {msg:?} from the stream"))?
        }
    }
    Err(Status::internal(format!("Failed to parse session config: {}", e)))
}

fn report(e: &Error, pk: &Row, table_id: u32) {
    tracing::error!(error = %e.as_report(), table_id, "failed to flush the table {}", table_id);
    warn!(target: "auto_schema_change", ?pk, "New columns should be a subset of the original");
    log::warn!("falling back to the default compression");
    error!("{}", e);
    panic!("oops");
    todo!();
    consistency_panic!(?pk, "updating non-existing row");
    log_error!(name, e, "parse column failed");
    let _ = invalid_option_error!("`{MISSING}` is required");
    unimplemented!("not supported in local mode")
}

#[cfg(test)]
mod tests {
    #[test]
    fn it_panics() {
        panic!("a message from a test module");
    }
}

#[tokio::test]
async fn standalone_test() {
    bail!("a message from a standalone test");
}

#[cfg(any(test, madsim))]
fn mock_catalog() {
    bail!("a message only a test or simulation build prints");
}

#[expect(dead_code)]
fn never_called() {
    panic!("a message of code that never runs");
}

#[cfg(not(test))]
fn release_only() {
    bail!("a message of the release build only");
}
"""


def table(text: str) -> list[tuple[object, ...]]:
    return [
        (s.line, s.template, s.error_type.value, s.severity.value, s.error_class, s.error_code)
        for s in sites("src/meta/src/service.rs", text)
    ]


def test_every_construct_gives_its_site_in_source_order() -> None:
    assert table(SOURCE) == [
        (
            9,
            "Session parameters error: {0}",
            "error_return",
            "error",
            "MetaErrorInner::SessionConfig",
            None,
        ),
        (
            13,
            "catalog id not found: {kind} {id}",
            "error_return",
            "error",
            "MetaErrorInner::CatalogIdNotFound",
            None,
        ),
        (
            18,
            "feature {feature:?} is not available",
            "error_return",
            "error",
            "FeatureNotAvailable",
            None,
        ),
        (
            31,
            "Backfill progress for vnode {:#?} not found, backfill_state not initialized properly",
            "error_return",
            "error",
            "StreamExecutorError",
            None,
        ),
        (41, "invalid upstream offset: {}", "error_return", "error", "ConnectorError", None),
        (
            42,
            "binlog file {name} not found in offset {offset}",
            "error_return",
            "error",
            "ConnectorError",
            None,
        ),
        (45, "only support single split, got {}", "error_return", "error", "ConnectorError", None),
        (46, "schema registry is not configured", "error_return", "error", "ConnectorError", None),
        (
            54,
            "Function `{}` takes at least {} arguments ({} given)",
            "error_return",
            "error",
            "ErrorCode::InvalidInputSyntax",
            None,
        ),
        (62, "function {name} needs an argument", "error_return", "error", None, None),
        (64, "function name longer than {} bytes", "error_return", "error", None, None),
        (
            67,
            "literal arguments are not supported here",
            "error_return",
            "error",
            "ErrorCode::BindError",
            None,
        ),
        (71, "IdGenerator only supports Table and Fragment", "panic", "fatal", None, None),
        (77, 'Array value must start with "{"', "error_return", "error", None, None),
        (80, "value {:?} out of range, expect {:?}", "error_return", "error", None, None),
        (82, "a checked buffer is always valid UTF-8 {{len}}", "panic", "fatal", None, None),
        (84, "not a number: {}", "panic", "fatal", None, None),
        (85, "value too large to transmit", "error_return", "error", "io::Error", None),
        (
            90,
            "get_stream request is empty",
            "error_code",
            "error",
            "tonic::Status",
            "InvalidArgument",
        ),
        (92, "no such stream for this request", "error_code", "error", "tonic::Status", "NotFound"),
        (95, "shutting down the stream service", "error_return", "error", "Status", None),
        (97, "stream is infinite and never ends", "panic", "fatal", None, None),
        (98, "unexpected message {msg:?} from the stream", "error_return", "error", None, None),
        (
            101,
            "Failed to parse session config: {}",
            "error_code",
            "error",
            "tonic::Status",
            "Internal",
        ),
        (105, "failed to flush the table {}", "log", "error", None, None),
        (106, "New columns should be a subset of the original", "log", "warning", None, None),
        (107, "falling back to the default compression", "log", "warning", None, None),
        (111, "updating non-existing row", "panic", "fatal", None, None),
        (112, "parse column failed", "log", "error", None, None),
        (113, "`{MISSING}` is required", "error_return", "error", None, None),
        (114, "not supported in local mode", "panic", "fatal", None, None),
        (142, "a message of the release build only", "error_return", "error", None, None),
    ]


def test_a_site_knows_its_function_call_and_extent() -> None:
    found = {s.line: s for s in sites("src/meta/src/service.rs", SOURCE)}
    bail = found[31]
    assert (bail.end_line, bail.function, bail.call) == (34, "BackfillState::get_progress", "bail!")
    assert bail.notation is Notation.RUST
    assert bail.path == "src/meta/src/service.rs"
    # a function declared inside another one is named after both
    assert (found[54].function, found[54].call) == (
        "bind_function::check_arity",
        "ErrorCode::InvalidInputSyntax",
    )
    assert (found[42].end_line, found[42].call) == (44, ".with_context")
    assert found[9].function == ""
    assert found[105].call == "error!"


def test_test_items_and_messages_without_words_are_left_out() -> None:
    templates = {s.template for s in sites("src/lib.rs", SOURCE)}
    assert "updating non-existing row" in templates
    assert not any("test" in t for t in templates)
    assert "oops" not in templates
    assert "{}" not in templates
    # the same file read through the one entry point gives the same sites
    assert [s.template for s in extract_file("src/lib.rs", SOURCE.encode())] == [
        s.template for s in sites("src/lib.rs", SOURCE)
    ]


def test_a_test_item_under_doc_comments_and_attributes_is_left_out() -> None:
    text = """
fn run() { panic!("the one message that is kept"); }

#[cfg(test)]
/// Helpers for the tests below.
#[allow(dead_code)]
mod helpers {
    pub fn fail() { panic!("a message in a test helper"); }
}
"""
    assert [s.template for s in sites("a.rs", text)] == ["the one message that is kept"]


def test_expect_of_a_parser_combinator_is_no_panic() -> None:
    text = """
use winnow::Parser;

fn keyword(input: &mut &str) -> PResult<()> {
    literal("SELECT").expect("a SELECT keyword here").parse_next(input)
}
fn other() { value.context("the context is still an error site"); }
"""
    assert [(s.template, s.error_type) for s in sites("a.rs", text)] == [
        ("the context is still an error site", ErrorType.ERROR_RETURN)
    ]


def test_a_site_inside_another_macro_is_read_from_its_tokens() -> None:
    text = """
fn f() -> MetaResult<()> {
    fail_point!("s3_upload_err", |_| Err(ObjectError::internal("s3 upload error happened")));
    for_all!(x => {
        let v = x.context("the value went missing").unwrap();
        Err(String::from("an owned message in tokens"))
    });
    Ok(())
}
"""
    assert [(s.line, s.template, s.error_class, s.severity) for s in sites("a.rs", text)] == [
        (3, "s3 upload error happened", "ObjectError", Severity.ERROR),
        (5, "the value went missing", "MetaError", Severity.ERROR),
        (6, "an owned message in tokens", "MetaError", Severity.ERROR),
    ]


def test_broken_source_yields_what_parses() -> None:
    text = 'fn f( { bail!("an unclosed function still bails"); '
    assert [s.template for s in sites("a.rs", text)] == ["an unclosed function still bails"]
    assert sites("a.rs", "") == []


def test_serde_names_what_it_expected_which_is_no_message() -> None:
    text = """
fn visit_str<E: de::Error>(self, s: &str) -> Result<bool, E> {
    match s {
        "1" => Ok(true),
        "0" => Err(de::Error::invalid_value(de::Unexpected::Str(s), &"true or false")),
        _ => Err(serde::de::Error::custom("a boolean written as 0 or 1")),
    }
}
"""
    assert [(s.template, s.error_class) for s in sites("a.rs", text)] == [
        ("a boolean written as 0 or 1", "de::Error")
    ]


def test_a_literal_wrapped_in_thousands_of_calls_is_read_without_recursion() -> None:
    text = 'fn f() { x.context("a message deep in a chain"' + ".to_string()" * 2000 + "); }"
    assert [s.template for s in sites("a.rs", text)] == ["a message deep in a chain"]


def test_calls_nested_thousands_deep_inside_a_macro_end_no_learn() -> None:
    text = "fn f() { m!(Err(" + "String::from(" * 3000 + '"deep"' + ")" * 3000 + ")); }"
    assert sites("a.rs", text) == []


def test_a_site_nested_past_the_depth_limit_is_not_searched_for() -> None:
    # the query's work grows with the square of the nesting: past MAX_DEPTH nothing starts
    deep = (
        "fn f() { "
        + "{ " * (MAX_DEPTH + 10)
        + 'bail!("a message nested far too deep");'
        + " }" * (MAX_DEPTH + 10)
        + " }"
    )
    shallow = (
        "fn f() { " + "{ " * 20 + 'bail!("a message nested as code nests");' + " }" * 20 + " }"
    )
    assert sites("a.rs", deep) == []
    assert [s.template for s in sites("a.rs", shallow)] == ["a message nested as code nests"]


def test_the_error_class_comes_from_the_return_type_the_way_the_dataset_reads_it() -> None:
    text = """
fn a() -> Result<(), anyhow::Error> { bail!("an anyhow error spelled out"); }
fn b() -> crate::error::ConnectorResult<()> { bail!("an alias of a module path"); }
fn c() -> Result<u8, String> { Err("a string is no error type".to_owned()) }
fn d() -> Result<u8, BoxedError> { Err("a boxed error is one".into()) }
fn e() -> Result<u8, Self::Error> { bail!("a trait's associated error"); }
fn f() -> Result<u8> { bail!("a bare alias names no error"); }
fn g() -> anyhow::Result<u8> { bail!("anyhow's own alias"); }
"""
    assert [(s.template, s.error_class) for s in sites("a.rs", text)] == [
        ("an anyhow error spelled out", "anyhow::Error"),
        ("an alias of a module path", "ConnectorError"),
        ("a string is no error type", None),
        ("a boxed error is one", "BoxedError"),
        ("a trait's associated error", None),
        ("a bare alias names no error", None),
        ("anyhow's own alias", "anyhow::Error"),
    ]
