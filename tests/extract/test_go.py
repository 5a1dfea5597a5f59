"""``kb.extract.go`` on a real-looking Go file holding every construct it reads.

No database: the extractor is pure. The expected sites were read off the source by hand:
the line where the call starts, the message in Go's notation (``{}`` for a non-literal
part of a concatenation), and the kind, severity, class, code and HTTP status the dataset
gives such a site.
"""

from __future__ import annotations

from kb.extract.extract import extract_file
from kb.extract.go import sites
from kb.extract.sites import Notation

SOURCE = """package etcdserver

import (
	"errors"
	"fmt"
	"log"
	"net/http"

	pkgerrors "github.com/pkg/errors"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

const msgNoLeader = "etcdserver: no leader elected yet"

var (
	ErrUnknownMethod = errors.New("etcdserver: unknown method")
	ErrStopped       = errors.New("etcdserver: server stopped")
	errShortRead     = fmt.Errorf("ioutil: short read")

	ErrGRPCNoLeader = status.Error(codes.Unavailable, msgNoLeader)
)

type EtcdServer struct {
	lg *zap.Logger
}

func (s *EtcdServer) apply(index uint64, name string) error {
	if index == 0 {
		return fmt.Errorf("cannot apply entry at index %d: %w", index, ErrStopped)
	}
	if name == "" {
		return pkgerrors.Wrapf(ErrStopped, "member %q has no name", name)
	}
	s.lg.Warn(
		"failed to apply request",
		zap.Uint64("index", index),
		zap.String("name", name),
	)
	s.lg.With(zap.String("member", name)).Named("raft").Error("raft log is corrupted")
	s.lg.Info("applied an entry to the backend")
	go func() {
		if err := recover(); err != nil {
			s.lg.Panic("unexpected panic in the apply loop", zap.Any("error", err))
		}
	}()
	return status.Errorf(codes.FailedPrecondition, "etcdserver: member %s is not started", name)
}

func serveHealth(w http.ResponseWriter, r *http.Request, lg *zap.Logger) {
	if r.Method != http.MethodGet {
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path != "/health" {
		http.Error(w, fmt.Sprintf("unknown request path %q", r.URL.Path), http.StatusBadRequest)
		return
	}
	sugar := lg.Sugar()
	sugar.Errorw("health check failed", "path", r.URL.Path)
	sugar.Warnf("slow health check took %v", 10)
	klog.ErrorS(ErrStopped, "Failed to update health status", "path", r.URL.Path)
}

func mustParse(value string) int {
	if value == "" {
		panic("empty value: " +
			value +
			" is not a number")
	}
	if len(value) > 20 {
		panic(fmt.Sprintf("value %q is longer than %d characters", value, 20))
	}
	if value[0] == '-' {
		panic(fmt.Errorf("negative value %s is not supported", value))
	}
	if value == "0" {
		panic(ErrStopped)
	}
	err := doParse(value)
	if err != nil {
		log.Fatalf("failed to parse %s: %v", value, err)
	}
	fmt.Errorf("%v: %v", value, err)
	log.Printf("Warning: ignoring the file %s", value)
	log.Printf("parsed %s in %v", value, 0)
	return 0
}
"""


def table(text: str) -> list[tuple[object, ...]]:
    return [
        (s.line, s.template, s.error_type.value, s.severity.value, s.error_class, s.error_code)
        for s in sites("server/etcdserver/server.go", text)
    ]


def test_every_construct_gives_its_site_in_source_order() -> None:
    assert table(SOURCE) == [
        (19, "etcdserver: unknown method", "error_return", "error", "ErrUnknownMethod", None),
        (20, "etcdserver: server stopped", "error_return", "error", "ErrStopped", None),
        (21, "ioutil: short read", "error_return", "error", "errShortRead", None),
        # the message is a constant; the sentinel is a gRPC status
        (
            23,
            "etcdserver: no leader elected yet",
            "error_code",
            "error",
            "ErrGRPCNoLeader",
            "Unavailable",
        ),
        (32, "cannot apply entry at index %d: %w", "error_return", "error", None, None),
        (35, "member %q has no name", "error_return", "error", None, None),
        (37, "failed to apply request", "log", "warning", None, None),
        (42, "raft log is corrupted", "log", "error", None, None),
        (46, "unexpected panic in the apply loop", "panic", "fatal", None, None),
        (
            49,
            "etcdserver: member %s is not started",
            "error_code",
            "error",
            "status.Error",
            "FailedPrecondition",
        ),
        (54, "Method Not Allowed", "error_return", "error", None, None),
        (58, "unknown request path %q", "error_return", "error", None, None),
        (62, "health check failed", "log", "error", None, None),
        (63, "slow health check took %v", "log", "warning", None, None),
        (64, "Failed to update health status", "log", "error", None, None),
        (69, "empty value: {} is not a number", "panic", "fatal", None, None),
        (74, "value %q is longer than %d characters", "panic", "fatal", None, None),
        (77, "negative value %s is not supported", "panic", "fatal", None, None),
        (84, "failed to parse %s: %v", "log", "fatal", None, None),
        # the standard logger's Print logs an error when its words say so
        (87, "Warning: ignoring the file %s", "log", "warning", None, None),
    ]


def test_a_site_knows_its_function_call_notation_and_status() -> None:
    found = {s.line: s for s in sites("server/etcdserver/server.go", SOURCE)}
    warn = found[37]
    assert (warn.end_line, warn.function, warn.call) == (41, "EtcdServer.apply", "s.lg.Warn")
    assert warn.notation is Notation.PLAIN
    assert found[32].notation is Notation.PRINTF
    # a panic inside a function literal belongs to the function around it
    assert found[46].function == "EtcdServer.apply"
    assert (found[54].http_status, found[58].http_status) == (405, 400)
    assert found[58].notation is Notation.PRINTF  # the Sprintf brings its format
    assert (found[69].end_line, found[69].call) == (71, "panic")
    assert found[19].function == ""
    assert found[35].call == "errors.Wrapf"


def test_info_logs_bare_panics_and_messages_without_words_are_left_out() -> None:
    templates = [s.template for s in sites("a.go", SOURCE)]
    assert "applied an entry to the backend" not in templates
    assert "%v: %v" not in templates
    # panic(fmt.Errorf(...)) is one site, the panic's
    assert templates.count("negative value %s is not supported") == 1
    assert [s.template for s in extract_file("a.go", SOURCE.encode())] == templates


def test_escapes_and_raw_strings_are_read_as_go_reads_them() -> None:
    text = """package p

func f() {
	return errors.New("quoted \\"name\\" with a tab\\there")
	return errors.New(`raw \\n text stays as written`)
}
"""
    assert [s.template for s in sites("a.go", text)] == [
        'quoted "name" with a tab\there',
        "raw \\n text stays as written",
    ]


def test_broken_source_yields_what_parses() -> None:
    text = 'package p\nfunc f( {\n\tpanic("an unclosed function still panics")\n'
    assert [s.template for s in sites("a.go", text)] == ["an unclosed function still panics"]
    assert sites("a.go", "") == []


def test_a_concatenation_of_thousands_of_terms_is_read_without_recursion() -> None:
    text = 'package p\nfunc f() { panic("a message of many parts: " ' + "+ x " * 3000 + ") }\n"
    (site,) = sites("a.go", text)
    assert site.template == "a message of many parts: " + "{}" * 3000
