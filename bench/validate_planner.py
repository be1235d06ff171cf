"""The planner against published training runs: bench/validate_planner.sh says what and how."""
import argparse
import csv
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The row's device text (its first words) -> how dlf plan is given that machine.
DEVICES = [
    ("A100-80GB", {"preset": "a100-80gb"}),
    ("H100-80GB", {"preset": "h100-80gb"}),
    ("trn1.32xlarge", {"system": "trn1.32xlarge", "per_node": 32}),
]


def eq3_flops(batch, seq, layers, hidden, vocab):
    """Narayanan et al. (SC21) Eq. (3): FLOPs of an iteration, the recompute forward counted."""
    s, l, h = seq, layers, hidden
    return 96 * batch * s * l * h * h * (1 + s / (6 * h) + vocab / (16 * l * h))


def model_flops(batch, seq, layers, hidden, vocab):
    """Korthikanti et al. (2022) Section 6: an iteration's model FLOPs, no recompute (MFU)."""
    s, l, h = seq, layers, hidden
    return 72 * batch * s * l * h * h * (1 + s / (6 * h) + vocab / (12 * l * h))


def table1_chunks():
    """Virtual stages of SC21 Table 1's rows by (layers, hidden): megatron_sc21_table1.csv."""
    lines = (ROOT / "bench/data/megatron_sc21_table1.csv").read_text().splitlines()
    rows = csv.DictReader(line for line in lines if not line.startswith("#"))
    return {(int(r["layers"]), int(r["hidden"])): int(r["virtual_stages"]) for r in rows}


def number(text):
    return int(text) if text.strip() else None


class Skip(Exception):
    """A row dlf plan cannot plan as it was run; the message says why."""


def plan_args(row, chunks):
    """dlf plan's options for `row` as it was run, and the assumptions made; Skip if it cannot."""
    notes, assumed = row["notes"], []
    layers, hidden, heads = number(row["layers"]), number(row["hidden"]), number(row["heads"])
    kv, ffn = number(row["kv_heads"]), number(row["ffn"])
    device = next((d for prefix, d in DEVICES if row["device"].startswith(prefix)), None)
    reasons = [why for why, cannot in [
        ("devices inconsistent with tp x pp x dp in the source",
         "INCONSISTENT ROW" in notes or not row["devices"]),
        ("layer dimensions not in the source", layers is None),
        ("Llama-shaped (grouped KV heads or FFN width != 4h): dlf plan --layers --hidden "
         "--heads is a GPT, --model llama* plans data parallelism only",
         (kv is not None and kv != heads) or (ffn is not None and ffn != 4 * hidden)),
        ("sequence parallelism: not in dlf yet",
         row["sp"] == "yes" or "sequence_parallel=True" in notes),
        ("no sim preset for this device", device is None),
        ("vocabulary not in the source", not row["vocab"]),
        (f"ZeRO '{row['zero'][:40]}...': no dlf plan equivalent",
         row["zero"] not in ("", "1", "2", "3"))] if cannot]
    if reasons:
        raise Skip("; ".join(reasons))
    devices = int(row["devices"])
    tp, pp = number(row["tp"]), number(row["pp"])
    if tp is None and pp is None:
        product = re.search(r"tp\*pp = (\d+)", notes)
        if not product:
            raise Skip("tp and pp not in the source")
        tp, pp = 8, int(product.group(1)) // 8
        assumed.append(f"tp {tp} pp {pp} (source gives tp*pp only; Table 1's tp 8)")
    recompute = row["recompute"]
    if not recompute:
        recompute = "full"
        assumed.append("recompute full (not stated; Table 1's)")
    args = ["--layers", layers, "--hidden", hidden, "--heads", heads, "--vocab", row["vocab"],
            "--seq", row["seq"], "--tp", tp, "--pp", pp, "--batch", row["global_batch"],
            "--precision", "bf16", "--recompute", recompute]
    if "preset" in device:
        args += ["--devices", devices]
    else:
        args += ["--system", device["system"], "--nodes", devices // device["per_node"]]
    if row["zero"]:
        args += ["--zero", row["zero"]]
    micro = re.search(r"micro[-_]batch (\d+)", notes)
    if micro:
        args += ["--micro-batch", micro.group(1)]
    virtual = chunks.get((layers, hidden), 1) if row["id"].startswith("meg21-t1") else 1
    if virtual > 1:
        args += ["--schedule", "interleaved", "--virtual-stages", virtual]
    return [str(a) for a in args], device, assumed


def measured_quantity(row, plan):
    """(predicted, measured, ratio): ratio = predicted / measured throughput (> 1: optimistic)."""
    unit, measured = row["measured_unit"], float(row["measured_value"])
    step, n = plan["value"], plan["devices"]
    dims = (int(row["global_batch"]), int(row["seq"]), int(row["layers"]), int(row["hidden"]),
            int(row["vocab"]))
    if unit.startswith("seconds per iteration"):
        return step, measured, measured / step
    if "TFLOP/s per GPU" in unit and row["id"].startswith("meg21"):
        predicted = eq3_flops(*dims) / (step * n) / 1e12
    elif unit.startswith("MFU"):
        peak = plan["tflops_per_device"] * 1e12 / plan["mfu"]
        predicted = 100 * model_flops(*dims) / (step * n * peak)
    elif unit.startswith("sequences/s"):
        predicted = int(row["global_batch"]) / step
    else:
        raise Skip(f"unit '{unit}': no conversion")
    return predicted, measured, predicted / measured


def run_plan(dlf, args, device):
    where = [] if "system" in device else ["--device", f"sim:{device['preset']}"]
    out = subprocess.run([dlf, "plan", *args, *where, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        raise Skip("dlf plan: " + (out.stderr.strip().splitlines() or ["failed"])[-1])
    return json.loads(out.stdout)


def median(values):
    v = sorted(values)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2


def halves(planned):
    """The fixed split: within each source, planned rows in file order, alternately fit, test."""
    seen = {}
    for r in planned:
        k = seen.get(r["source"], 0)
        seen[r["source"]] = k + 1
        r["half"] = "fit" if k % 2 == 0 else "test"


def ranking(planned):
    """(a, b, kept) for each pair of rows of one model, machine and throughput unit (times of
    different batches do not rank) run differently: kept if the plan orders them as measured."""
    groups = {}
    for r in planned:
        if not r["unit"].startswith("seconds"):
            groups.setdefault((r["model_dims"], r["preset"], r["unit"]), []).append(r)
    def kept(a, b):
        return (a["measured"] - b["measured"]) * (a["predicted"] - b["predicted"]) > 0
    return [(a["id"], b["id"], kept(a, b))
            for rows in groups.values() for i, a in enumerate(rows) for b in rows[i + 1:]
            if a["args"] != b["args"]]


def line(**fields):
    """One benchmark line (../shared/BENCH.md) on stdout."""
    print(json.dumps({"bench": "plan_validation", "impl": "sim", "threads": 1, **fields},
                     separators=(",", ":")))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--dlf", required=True, help="the dlf binary")
    p.add_argument("--csv", default=str(ROOT / "bench/data/published_runs.csv"),
                   help="published runs (bench/data/published_runs.csv's columns)")
    p.add_argument("--rows", type=int, default=0, help="only the first N rows (a quick check)")
    o = p.parse_args()
    rows = list(csv.DictReader(open(o.csv, newline="")))
    if o.rows:
        rows = rows[: o.rows]
    chunks = table1_chunks()
    planned, skipped = [], []
    for row in rows:
        try:
            args, device, assumed = plan_args(row, chunks)
            plan = run_plan(o.dlf, args, device)
            predicted, measured, ratio = measured_quantity(row, plan)
        except Skip as why:
            skipped.append((row["id"], str(why)))
            continue
        planned.append({
            "id": row["id"], "source": row["source"], "unit": row["measured_unit"].split(" (")[0],
            "model_dims": (row["layers"], row["hidden"], row["heads"], row["seq"]),
            "preset": plan["device"], "args": args, "assumed": assumed, "fits": plan["fits"],
            "predicted": predicted, "measured": measured, "ratio": ratio})
    halves(planned)
    report(planned, skipped)


def report(planned, skipped):
    err = sys.stderr
    print(f"{'row':<12} {'half':<4} {'predicted':>10} {'measured':>9} {'error':>7}  unit", file=err)
    for r in planned:
        fields = {"case": r["id"], "metric": "predicted", "value": round(r["predicted"], 3),
                  "unit": r["unit"], "baseline_impl": "published", "baseline": r["measured"],
                  "ratio": round(r["ratio"], 3), "half": r["half"], "device": r["preset"],
                  "fits": r["fits"]}
        if r["assumed"]:
            fields["assumed"] = "; ".join(r["assumed"])
        line(**fields)
        print(f"{r['id']:<12} {r['half']:<4} {r['predicted']:>10.2f} {r['measured']:>9.2f} "
              f"{100 * (r['ratio'] - 1):>+6.1f}%  {r['unit']}"
              + ("" if r["fits"] else " (plan: does not fit)")
              + "".join(f"; assumed {a}" for a in r["assumed"]), file=err)
    for half in ("fit", "test"):
        rows = [r for r in planned if r["half"] == half]
        errors = [abs(r["ratio"] - 1) for r in rows]
        if not rows:
            line(case=f"{half} half", metric="median_abs_error", unit="fraction", value=None,
                 rows=0)
            continue
        summary = {"value": round(median(errors), 3), "rows": len(rows),
                   "worst_abs_error": round(max(errors), 3),
                   "within_15pct": sum(e <= 0.15 for e in errors),
                   "median_ratio": round(median([r["ratio"] for r in rows]), 3)}
        line(case=f"{half} half", metric="median_abs_error", unit="fraction", **summary)
        print(f"{half} half: {summary['rows']} rows, median |error| {100 * summary['value']:.1f} %,"
              f" worst {100 * summary['worst_abs_error']:.1f} %, {summary['within_15pct']} within"
              f" 15 %, median predicted/measured {summary['median_ratio']}", file=err)
    pairs = ranking(planned)
    line(case="layout ranking", metric="pairs_kept", value=sum(k for _, _, k in pairs),
         unit="pairs", pairs=len(pairs))
    print(f"layout ranking (same model, machine and unit): {sum(k for _, _, k in pairs)} of "
          f"{len(pairs)} pairs kept" + "".join(f"\n  {a} vs {b}: swapped" for a, b, k in pairs
                                             if not k), file=err)
    print(f"not planned ({len(skipped)} of {len(planned) + len(skipped)} rows):", file=err)
    for rid, why in skipped:
        print(f"  {rid}: {why}", file=err)


if __name__ == "__main__":
    main()
