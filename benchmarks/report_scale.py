"""``docs/performance.md`` sections for PostgreSQL at scale: the importer's COPY against
``executemany`` (``bench_copy.py``) and the end-to-end run at 10^5-10^6 records
(``bench_scale.py``). Like every renderer here, each lookup tolerates a missing key."""

from __future__ import annotations

from typing import Any

from report_format import Column, columns_table, fmt, get, loadavg, machine_line, obj, table

COPY_COLUMNS: list[Column] = [
    ("file", "file"),
    ("records", "records"),
    ("executemany s", "executemany_wall_s"),
    ("COPY s", "copy_wall_s"),
    ("executemany records/s", "executemany_records_per_s"),
    ("COPY records/s", "copy_records_per_s"),
    ("COPY / executemany (wall)", "copy_over_executemany_wall"),
    ("same export", "same_export"),
]

SIZE_COLUMNS: list[Column] = [
    ("file", "file"),
    ("records", "records"),
    ("import s", "import_s"),
    ("import records/s", "import_records_per_s"),
    ("matcher build s", "matcher_build_s"),
    ("build peak RSS MB", "matcher_build_peak_rss_mb"),
    ("fresh host serves after s", "fresh_host_serves_s"),
    ("worker RSS MB", ("worker_memory", "rss_mb")),
    ("worker PSS MB", ("worker_memory", "pss_mb")),
    ("2 workers' PSS / 1", "two_workers_pss_over_one"),
]


def _machine(data: dict[str, Any]) -> str:
    machine = obj(data, "machine")
    return machine_line(
        data.get("when"),
        f"CPUs: {fmt(machine.get('cpus'))}",
        loadavg(machine.get("loadavg_at_start")),
    )


def render_copy(data: dict[str, Any]) -> list[str]:
    return [
        _machine(data),
        "",
        columns_table(COPY_COLUMNS, get(data, "cases") or []),
        "",
        f"COPY kept (at most 0.8 of executemany's wall time on the largest file, same "
        f"export): {fmt(data.get('keep_copy'))}.",
    ]


def render_scale(data: dict[str, Any]) -> list[str]:
    sizes = [s for s in get(data, "sizes") or [] if isinstance(s, dict)]
    out = [_machine(data)]
    settings = obj(data, "postgresql")
    if settings:
        out[0] += " PostgreSQL: " + ", ".join(f"{k} {fmt(v)}" for k, v in settings.items()) + "."
    if data.get("mutate"):
        out[0] += f" Synthesised copies differ from the real records by: {data['mutate']}."
    out += ["", columns_table(SIZE_COLUMNS, sizes, drop_empty=True)]
    if sizes:
        where = sizes[-1].get("matcher_build_where")
        out += ["", f"Matcher build: {fmt(where)}."]
    for note in get(data, "notes") or []:
        out += ["", f"Note: {note}"]
    for size in sizes:
        again = obj(size, "pages_measured")
        if again:
            load = loadavg(obj(again, "machine").get("loadavg_at_start")) or "no load average"
            out += [
                "",
                f"The pages at {fmt(size.get('records'))} records were measured again, "
                f"{fmt(again.get('when'))} ({fmt(again.get('how'))}), on the database this run "
                f"left; {load}.",
            ]
        pages = [p for p in size.get("pages") or [] if isinstance(p, dict)]
        calibration = pages[0].get("calibration_ms") if pages else None
        if calibration:
            out += [
                "",
                f"A fixed Python workload took {fmt(calibration[0])} ms before the pages at "
                f"{fmt(size.get('records'))} records and {fmt(calibration[-1])} ms after: how "
                "fast the machine ran during them.",
            ]
    cases: dict[str, list[Any]] = {}
    goals: dict[str, tuple[Any, Any]] = {}
    for size in sizes:
        for page in size.get("pages") or []:
            if isinstance(page, dict):
                name = str(page.get("case"))
                row = cases.setdefault(name, [])
                row += [page.get("p95_ms"), page.get("cpu_p95_ms")]
                goal, p95 = page.get("goal_p95_ms"), page.get("p95_ms")
                met = None if goal is None or p95 is None else "yes" if p95 <= goal else "no"
                goals[name] = (goal, met)  # the largest size's, the last one written
    wall, cpu = obj(data, "p95_scaled_over_baseline"), obj(data, "cpu_p95_scaled_over_baseline")
    if cases:
        heads = ["page"]
        for s in sizes:
            heads += [
                f"p95 ms at {fmt(s.get('records'))}",
                f"CPU p95 ms at {fmt(s.get('records'))}",
            ]
        heads += ["ratio (wall)", "ratio (CPU)", "goal p95 ms", "meets goal (largest)"]
        rows = [[n, *v, wall.get(n), cpu.get(n), *goals[n]] for n, v in cases.items()]
        out += [
            "",
            table(heads, rows),
            "",
            "The goal is for the wall p95, which holds the database server's time; the CPU "
            "p95 is the serving process's alone (the database's is not in it), the figure "
            "to compare between sizes when the machine is busy. Uncached searches are "
            "distinct queries each sent once, so no per-revision page cache answers them.",
        ]
    return out
