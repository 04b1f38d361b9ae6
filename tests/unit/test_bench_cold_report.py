"""The cold bench's stored figures (bench/cold.py): a fleet run of one namespace size keeps
the other's figures, and the targets are computed from whichever namespaces are stored."""

from bench.cold import markdown, merged_tier, targets


def _fleet(tables: int, idle: float, alone: float, one: float, all_cow: float, all_script: float) -> dict:
    return {"name": f"fleet{tables}", "tables": tables, "rows": 200, "runs": {
        "nothing changed": {"changed": 0, "cow": {"s": idle}},
        "one changed": {"changed": 1, "cow": {"s": one}},
        "one table alone": {"changed": 1, "cow": {"s": alone}},
        "all changed": {"changed": tables, "cow": {"s": all_cow}, "script": {"s": all_script}}}}


def _tier(command: str, bare: float, *workloads: dict) -> dict:
    return {"command": command, "bare_s": bare, "workloads": list(workloads)}


def test_a_fleet_run_keeps_the_namespaces_it_did_not_measure() -> None:
    old = _tier("bench --fleet 40", 3.1, _fleet(40, 0.8, 5.0, 6.0, 30.0, 90.0))
    new = _tier("bench --fleet 200", 3.4, _fleet(200, 1.9, 5.0, 8.0, 100.0, 240.0))
    tier = merged_tier("fleet", old, new)
    assert [(w["name"], w["command"], w["bare_s"]) for w in tier["workloads"]] == [
        ("fleet40", "bench --fleet 40", 3.1), ("fleet200", "bench --fleet 200", 3.4)]
    found = {t["target"]: t["met"] for t in targets({"fleet": tier})}
    assert found["fleet40: every table changed at least 3x faster than the script"] is True
    assert found["fleet200: every table changed at least 3x faster than the script"] is False  # 2.4x
    assert found["fleet200: one table changed within 1.5x that table's run alone"] is False  # 1.6x
    text = markdown({"tiers": {"fleet": tier}})
    assert "200 tables: `bench --fleet 200`, bare Spark start 3.4 s" in text
    assert "40 tables: `bench --fleet 40`, bare Spark start 3.1 s" in text


def test_a_fleet_run_of_the_same_namespace_replaces_it() -> None:
    old = _tier("old", 3.1, _fleet(40, 0.8, 5.0, 6.0, 30.0, 90.0))
    new = _tier("new", 3.2, _fleet(40, 2.5, 5.0, 6.0, 30.0, 90.0))
    tier = merged_tier("fleet", old, new)
    assert [(w["command"], w["runs"]["nothing changed"]["cow"]["s"]) for w in tier["workloads"]] == [("new", 2.5)]
    assert merged_tier("single", old, new) is new  # other tiers are replaced whole


def test_a_repeated_short_run_reports_its_median_run_and_every_time() -> None:
    from bench.cold import median_run

    runs = [{"s": 6.1, "files_read": 1}, {"s": 5.0, "files_read": 2}, {"s": 5.4, "files_read": 3}]
    chosen = median_run(runs)
    assert (chosen["s"], chosen["files_read"], chosen["runs_s"]) == (5.4, 3, [6.1, 5.0, 5.4])
    assert median_run(runs[:2])["s"] == 5.0  # an even count: the lower middle, a run that happened
    fleet = _fleet(40, 0.8, 3.3, 5.4, 30.0, 90.0)
    fleet["runs"]["one changed"]["cow"] = chosen
    text = markdown({"tiers": {"fleet": _tier("bench --fleet 40", 3.1, fleet)}})
    assert "| 5.4 (median of 6.1, 5.0, 5.4) |" in text
    found = {t["target"]: t["value"] for t in targets({"fleet": _tier("c", 3.1, fleet)})}
    assert found["fleet40: one table changed within 1.5x that table's run alone"] == "1.64x"


def test_namespaces_measured_by_one_command_are_named_once() -> None:
    tier = _tier("bench --fleet 40,200", 1.9, _fleet(40, 0.5, 2.6, 2.8, 15.6, 53.8),
                 _fleet(200, 1.2, 2.7, 3.8, 57.1, 176.4))
    text = markdown({"tiers": {"fleet": merged_tier("fleet", None, tier)}})
    assert "40 and 200 tables: `bench --fleet 40,200`, bare Spark start 1.9 s)" in text


def _table(name: str, rows: int, key: str, skew: str, dv: float, cow: float) -> dict:
    return {"name": name, "rows": rows, "key": key, "skew": skew, "incremental_s": {"dv": dv, "cow": cow},
            "full_load": {}, "rewritten": {}}


def test_growth_is_judged_only_between_runs_on_a_machine_of_the_same_speed() -> None:
    single = {"bare_s": 1.9, "workloads": [_table("single_decimal_recent", 10**6, "decimal", "recent", 4.2, 5.2)]}
    large = {"bare_s": 3.6, "workloads": [_table("large_decimal_recent", 16 * 10**6, "decimal", "recent", 9.3, 6.0)]}
    found = {t["target"]: t for t in targets({"single": single, "large": large})}
    dv = found["dv at 16M rows at most 1.5x its time at 1M: decimal recent (not comparable: bare Spark starts "
               "3.6 s at 16M, 1.9 s at 1M)"]
    assert (dv["value"], dv["met"]) == ("2.21x", None)
    found = {t["target"]: t["met"] for t in targets({"single": single, "large": dict(large, bare_s=2.1)})}
    assert found["dv at 16M rows at most 1.5x its time at 1M: decimal recent"] is False
    assert found["cow at 16M rows at most 1.5x its time at 1M: decimal recent"] is True


def test_runs_with_an_executor_jvm_are_kept_and_judged_apart_from_one_jvm_runs() -> None:
    from bench.cold import executor_master, tier_key

    assert executor_master("8g", 2) == "local-cluster[1,2,8192]"
    assert executor_master("4096m", 4) == "local-cluster[1,4,4096]"
    for bad in ("8", "0g", "8x", "g", "-1g"):
        try:
            executor_master(bad, 2)
        except ValueError:
            continue
        raise AssertionError(f"{bad!r} was taken as a size")
    assert (tier_key("large", False), tier_key("large", True)) == ("large", "large_executors")

    def tier(name: str, rows: int, bare: float, dv: float, cow: float, executors: str = "") -> dict:
        return {"command": "c", "bare_s": bare, "total_s": 60, "settings": {"executor_memory": executors},
                "workloads": [_table(name, rows, "decimal", "recent", dv, cow)]}

    tiers = {"single": tier("single_decimal_recent", 10**6, 1.9, 4.0, 5.0),
             "large": tier("large_decimal_recent", 16 * 10**6, 1.9, 4.0, 8.0),  # cow 1.6x: not met
             "single_executors": tier("single_decimal_recent", 10**6, 3.0, 5.0, 6.0, "8g"),
             "large_executors": tier("large_decimal_recent", 16 * 10**6, 3.2, 5.5, 7.2, "8g")}  # 1.1x, 1.2x
    found = {t["target"]: t["met"] for t in targets(tiers)}
    note = " (data work in an executor JVM)"
    assert found["cow at 16M rows at most 1.5x its time at 1M: decimal recent"] is False
    assert found["cow at 16M rows at most 1.5x its time at 1M: decimal recent" + note] is True
    assert found["dv at 16M rows at most 1.5x its time at 1M: decimal recent" + note] is True
    # no growth across the two kinds of run: only the one-JVM pair and the executor pair
    assert sum("at 16M rows" in t for t in found) == 4
    text = markdown({"tiers": tiers})
    assert "**large_executors** (`c`, data work in an executor JVM of 8g on Java's defaults" in text
    assert "**large** (`c`; bare Spark start 1.9 s" in text
