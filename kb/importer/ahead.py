"""Parse ahead in a forked process: the writer's batch ``k`` overlaps the parsing of ``k+1``.

An import is two kinds of work of about the same size: Python parsing (JSON, field checks,
pattern admission, each new row's parameters) and SQLite writing. In one process they
take turns; in a thread the parser holds the GIL the writer needs to hand rows to SQLite
(measured: slower than no thread). Here a child process, forked from the importing one,
runs ``Parser.batches`` (every step that never touches the database) and sends each
parsed batch down a pipe; the parent folds and writes it. On two cores the import takes
about as long as the longer of the two halves instead of their sum.

What crosses the pipe, one message a batch: the batch (``Incoming`` items as
``Parser.pack`` leaves them: a new record as its row's parameters and its line, the rest
rebuilt by ``Parser.unpack``), the number of the last line read, and the lines the child
rejected (replayed into the parent's report, so the report is the same as without a
child). The parent answers with one flag: whether new rows are worth preparing (not on a
re-import, where most records turn out stored).

Measured (16.7k records, same minute, same machine): 2.3-2.8 s against 3.3-4.4 s in one
process; the child uses 1.7-2.0 s of CPU, the writer waits for it 0.4-0.7 s in all.

The child holds at most one batch beyond the one in the pipe (a blocked ``send`` stops
it), so memory stays flat. It never uses the parent's database connection: it exits with
``os._exit``, which closes nothing and runs no exit handler of the parent's.

Fork only where it is safe and known: ``os.fork`` exists, and this process runs no other
thread (a fork copies a lock held by another thread as held forever). The import command
asks for it; the admin's task (inside a web server) does not.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import threading
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from kb.importer.parsing import Incoming, Parser


# The writer waits for the first batch: a small one starts it sooner.
FIRST_BATCH = 200


class ParserFailed(RuntimeError):
    """The parsing process failed or ended early; the message says how."""


def can_fork() -> bool:
    return hasattr(os, "fork") and threading.active_count() == 1


def _child(
    parser: Parser,
    lines: Iterable[bytes | None],
    sizes: tuple[int, int],
    out: Connection,
    control: Connection,
) -> None:
    report = parser.report
    try:
        for batch, number in parser.batches(lines, *sizes, first_size=FIRST_BATCH):
            rejected = report.errors[:]
            report.errors.clear()
            packed = parser.pack(batch)
            out.send(("batch", packed, number, rejected, report.rejected, report.errors_truncated))
            report.rejected = report.errors_truncated = 0
            while control.poll():
                parser.prepare_rows = control.recv()
        out.send(("end",))
    except BaseException as exc:  # everything goes to the parent, which raises it
        text = "".join(traceback.format_exception(exc))
        try:
            try:
                out.send(("error", exc, text))
            except Exception:  # an exception that does not pickle: its text alone
                out.send(("error", None, text))
        except OSError:  # the parent is gone
            pass
    finally:
        out.close()


class _Child:
    """The forked parser's process id, reaped exactly once."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.exitcode: int | None = None

    def wait(self, stop: bool = False) -> int:
        if self.exitcode is None:
            if stop:
                with suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGTERM)
            _pid, status = os.waitpid(self.pid, 0)
            self.exitcode = os.waitstatus_to_exitcode(status)
        return self.exitcode


@contextmanager
def parsed_ahead(
    parser: Parser, lines: Iterable[bytes | None], batch_size: int, commit_records: int
) -> Iterator[Iterator[tuple[list[Incoming], int]]]:
    """Starts the child at once (before the caller starts any thread) and gives
    ``parser.batches(lines, batch_size, commit_records)`` as computed there (see the module
    docstring); the child is stopped on leaving. The caller must not read ``lines``.

    A plain ``os.fork``, not ``multiprocessing.Process``: that one closes the child's
    standard input, which is the file ``manage.py import_records -`` reads."""
    receive, send = multiprocessing.Pipe(duplex=False)
    control_in, control_out = multiprocessing.Pipe(duplex=False)
    # Objects that exist now are never collected in the child: frozen, its collections
    # leave them (and their pages, shared until written) alone.
    gc.freeze()
    try:
        pid = os.fork()
        if pid == 0:  # the child: never returns into the caller's code
            code = 1
            try:
                receive.close()
                control_out.close()
                _child(parser, lines, (batch_size, commit_records), send, control_in)
                code = 0
            finally:
                os._exit(code)
    finally:
        gc.unfreeze()
    child = _Child(pid)
    send.close()
    control_in.close()
    failed = True
    try:
        yield _received(parser, receive, control_out, child)
        failed = False
    finally:
        receive.close()  # a child still sending gets EPIPE and ends
        control_out.close()
        child.wait(stop=failed)  # stopped if the import failed: it may be blocked reading


def _received(
    parser: Parser, receive: Connection, control: Connection, child: _Child
) -> Iterator[tuple[list[Incoming], int]]:
    report = parser.report
    prepare = parser.prepare_rows
    while True:
        try:
            message: tuple[Any, ...] = receive.recv()
        except EOFError:
            raise ParserFailed(
                f"the import's parser process ended early (exit code {child.wait()})"
            ) from None
        except Exception as exc:  # e.g. its exception does not unpickle here
            reason = f"unreadable message from the import's parser process: {exc}"
            raise ParserFailed(reason) from exc
        if message[0] == "end":
            return
        if message[0] == "error":  # the child's own exception where it could be sent
            _kind, failure, text = message
            if not isinstance(failure, BaseException):
                failure = ParserFailed(f"the import's parser process failed:\n{text}")
            failure.add_note(f"(raised in the import's parser process)\n{text}")
            raise failure
        _kind, batch, number, rejected, count, truncated = message
        for error in rejected:
            report.reject(error.line, error.field, error.message)
        report.rejected += count - len(rejected)
        report.errors_truncated += truncated
        yield parser.unpack(batch), number
        if parser.prepare_rows != prepare:  # the writer's verdict on this batch
            prepare = parser.prepare_rows
            with suppress(OSError):  # the child may be done and gone
                control.send(prepare)
