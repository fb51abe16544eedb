#!/usr/bin/env python3
"""Measure real peak GPU memory for calibration cases (picker's vram_cases.csv format).

usage:
  measure_vram.py --cases tools/gpu_cases.csv --out cmd/picker/testdata/calibration/measured_gpu.csv
                  [--configs-dir model/catalog] [--timeout 120] [--budget 450] [--only ID,...]

Each case runs in a forked child process (so one case's allocator cache, CUDA context or
OOM cannot leak into the next). The model is built from the config.json that picker embeds
(model/catalog/configs/, looked up by catalog name or Hub id in model/catalog/models.json) with
random weights: nothing is downloaded, so the GPU machine needs no network. A case runs a
short job (two optimizer steps for training, a prefill plus a few decode steps for
inference) and reports

  torch.cuda.max_memory_allocated()   -> measured_gib (compare=allocated)
  torch.cuda.max_memory_reserved()    -> peak_reserved_gib
  device used (NVML, else mem_get_info) after the run -> device_used_gib

The output keeps the input's columns (so picker's calibration test and score.py read it)
plus peak_reserved_gib, device_used_gib, seconds and status; header comment lines record
the GPU, driver, torch/transformers/peft/bitsandbytes versions and the date. Cases the
harness cannot run (image pipelines, more than one GPU, bitsandbytes missing) are written
with status=skipped and a reason, never silently dropped.

Requires: torch with CUDA, transformers, peft; bitsandbytes for 8-bit optimizers and
quantized cases; pynvml optional.
"""
import argparse
import csv
import datetime
import json
import os
import subprocess
import sys
import time

GIB = float(1 << 30)
EXTRA_COLUMNS = ["peak_reserved_gib", "device_used_gib", "load_peak_gib", "seconds", "status"]


# ---------------------------------------------------------------------------------------
# Parent: read cases, run each in a subprocess, write results.

def load_catalog(configs_dir):
    with open(os.path.join(configs_dir, "models.json"), encoding="utf-8") as f:
        models = json.load(f)["models"]
    index = {}
    for m in models:
        for key in [m["name"], m["hf_id"]] + m.get("aliases", []):
            index[key.lower()] = m
    return index


def gpu_header():
    lines = []
    try:
        import torch
        lines.append(f"torch={torch.__version__} cuda={torch.version.cuda}")
        if torch.cuda.is_available():
            p = torch.cuda.get_device_properties(0)
            lines.append(f"gpu={p.name} memory_gib={p.total_memory / GIB:.2f}")
    except Exception as e:  # noqa: BLE001 - recorded, not fatal
        lines.append(f"torch unavailable: {e}")
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        lines.append("nvidia-smi: " + out.stdout.strip().replace("\n", " | "))
    except Exception as e:  # noqa: BLE001
        lines.append(f"nvidia-smi unavailable: {e}")
    for mod in ("transformers", "peft", "bitsandbytes"):
        try:
            lines.append(f"{mod}={__import__(mod).__version__}")
        except Exception:  # noqa: BLE001
            lines.append(f"{mod}=missing")
    lines.append("date=" + datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return lines


def run_case(case, config_path, timeout):
    """Run one case in a forked child. The parent imported torch, transformers and peft
    once but never initialised CUDA, so the child starts with a clean CUDA context and
    allocator (one case cannot leak into the next) without paying the imports again:
    forking saves ~8 s per case, which is what lets 40+ cases fit in a few minutes."""
    t0 = time.time()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        code = 0
        try:
            res = child_result(case, config_path)
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            res = {"status": f"error: {type(e).__name__}: {e}"[:300]}
            code = 1
        with os.fdopen(w, "w") as f:
            f.write(json.dumps(res))
        os._exit(code)
    os.close(w)
    deadline = t0 + timeout
    while True:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.time() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            os.close(r)
            return {"status": f"timeout after {timeout}s"}, time.time() - t0
        time.sleep(0.05)
    with os.fdopen(r) as f:
        data = f.read()
    try:
        result = json.loads(data)
    except ValueError:
        result = {"status": "error: child died without a result"}
    return result, time.time() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model", "catalog"),
                    help="folder with models.json and configs/ (default: the repository's model/catalog)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per case")
    ap.add_argument("--budget", type=int, default=450, help="stop starting new cases after this many seconds")
    ap.add_argument("--only", default="", help="comma list of case ids")
    a = ap.parse_args(argv)

    catalog = load_catalog(a.configs_dir)
    with open(a.cases, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(line for line in f if not line.startswith("#"))
        columns = list(reader.fieldnames)
        cases = [r for r in reader if r.get("id")]
    if a.only:
        keep = set(a.only.split(","))
        cases = [c for c in cases if c["id"] in keep]
    # Import the heavy modules once, before any fork, without touching CUDA.
    import torch  # noqa: F401
    import transformers  # noqa: F401
    try:
        import peft  # noqa: F401
    except ImportError:
        pass
    header = ["header completed at the end of the run (CUDA is not initialised before the forks)"]
    out_cols = columns + [c for c in EXTRA_COLUMNS if c not in columns]
    start = time.time()
    rows = []
    for c in cases:
        row = dict(c)
        entry = catalog.get(c["model"].lower())
        if time.time() - start > a.budget:
            row.update(status="skipped: run budget spent")
        elif entry is None:
            row.update(status="skipped: model not in model/catalog")
        elif "pipeline" in entry:
            row.update(status="skipped: image pipelines are not measured by this harness")
        elif int(c.get("gpus") or 1) > 1:
            row.update(status="skipped: single-GPU harness")
        else:
            cfg = os.path.join(a.configs_dir, "configs", entry["config"])
            res, secs = run_case(c, cfg, a.timeout)
            row["seconds"] = f"{secs:.1f}"
            for k in ("peak_reserved_gib", "device_used_gib", "load_peak_gib", "status"):
                if k in res:
                    row[k] = res[k]
            if "allocated_gib" in res:
                row["compare"], row["measured_gib"] = "allocated", f"{res['allocated_gib']:.4f}"
        print(f"{c['id']:<32} {row.get('status', ''):<10} alloc {row.get('measured_gib', '')} "
              f"reserved {row.get('peak_reserved_gib', '')} device {row.get('device_used_gib', '')} ({row.get('seconds', '-')}s)",
              flush=True)
        rows.append(row)
        write(a.out, header, out_cols, rows)  # rewrite after each case: a killed run keeps its results
    write(a.out, gpu_header(), out_cols, rows)
    return 0


def write(path, header, cols, rows):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        for line in header:
            f.write("# " + line + "\n")
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------
# Child: build one model and run one job.

def child_result(case, config_path):
    import torch
    try:
        res = measure(case, config_path)
        res["status"] = res.get("status", "ok")
    except torch.cuda.OutOfMemoryError:
        res = {"status": "oom", "allocated_gib": torch.cuda.max_memory_allocated() / GIB}
    except SkipCase as e:
        res = {"status": f"skipped: {e}"}
    return res


class SkipCase(Exception):
    pass


def device_used_gib():
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(int(os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or 0))
        return pynvml.nvmlDeviceGetMemoryInfo(h).used / GIB
    except Exception:  # noqa: BLE001 - fall back to the CUDA runtime's view
        import torch
        free, total = torch.cuda.mem_get_info()
        return (total - free) / GIB


def flag(case, key, default=""):
    v = (case.get(key) or "").strip()
    return v if v else default


def measure(case, config_path):
    import torch
    import transformers
    from transformers import AutoConfig

    task = flag(case, "task", "inference")
    precision = flag(case, "precision", "bf16" if task == "inference" else "bf16-mixed")
    quant = flag(case, "quant", "nf4" if task == "qlora" else "none")
    attention = flag(case, "attention", "sdpa")
    attn_impl = {"eager": "eager", "sdpa": "sdpa", "flash": "flash_attention_2"}[attention]
    batch = int(flag(case, "batch", "1"))
    seq = int(flag(case, "seq_len", "2048"))
    ckpt = flag(case, "grad_ckpt", "false").lower() == "true"
    half = torch.bfloat16 if precision.startswith("bf16") else torch.float16
    mixed = precision.endswith("-mixed")
    training = task in ("full-ft", "lora", "qlora")
    # Stored dtype, as picker assumes: AMP keeps fp32 weights (full-ft and plain LoRA);
    # QLoRA keeps the non-quantized parts in 16 bits; bf16/fp16 store in that dtype.
    if precision == "fp32" or (mixed and task in ("full-ft", "lora")) or (mixed and task == "inference"):
        store = torch.float32
    else:
        store = half

    cfg = AutoConfig.from_pretrained(_config_dir(config_path))
    cfg.use_cache = not training
    arch = cfg.model_type
    if arch == "bert":
        from transformers import AutoModelForSequenceClassification as Auto
    elif getattr(cfg, "is_encoder_decoder", False):
        from transformers import AutoModelForSeq2SeqLM as Auto
    else:
        from transformers import AutoModelForCausalLM as Auto

    torch.cuda.set_device(0)
    torch.cuda.reset_peak_memory_stats()
    # Build directly on the GPU: the model's own init fills random weights there (fast on
    # a GPU) and its buffers (rotary inv_freq, position ids) are computed correctly.
    with torch.device("cuda"):
        try:
            model = Auto.from_config(cfg, dtype=store, attn_implementation=attn_impl)
        except TypeError:  # transformers < 4.56 names it torch_dtype
            model = Auto.from_config(cfg, torch_dtype=store, attn_implementation=attn_impl)
    if quant != "none":
        model = _quantize(model, quant, flag(case, "double_quant", "false").lower() == "true", half)
    load_peak = torch.cuda.max_memory_allocated() / GIB

    if task in ("lora", "qlora"):
        from peft import LoraConfig, get_peft_model
        targets = flag(case, "lora_targets", "")
        lc = LoraConfig(r=int(flag(case, "lora_r", "8")), lora_alpha=16, lora_dropout=0.05,
                        target_modules=("all-linear" if targets == "all-linear" else targets.split(",")) if targets else None,
                        task_type="SEQ_CLS" if arch == "bert" else ("SEQ_2_SEQ_LM" if cfg.is_encoder_decoder else "CAUSAL_LM"))
        model = get_peft_model(model, lc)
    if ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if task in ("lora", "qlora"):
            model.enable_input_require_grads()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()

    vocab = getattr(cfg, "vocab_size", 32000)
    ids = torch.randint(0, vocab, (batch, seq), device="cuda")
    if training:
        model.train()
        opt = make_optimizer(flag(case, "optimizer", "adamw"), [p for p in model.parameters() if p.requires_grad])
        autocast = torch.autocast("cuda", dtype=half, enabled=mixed)
        for _ in range(2):
            with autocast:
                if arch == "bert":
                    out = model(input_ids=ids, labels=torch.zeros(batch, dtype=torch.long, device="cuda"))
                elif cfg.is_encoder_decoder:
                    out = model(input_ids=ids, labels=ids)
                else:
                    out = model(input_ids=ids, labels=ids)
            out.loss.backward()
            del out
            opt.step()
            opt.zero_grad(set_to_none=True)
    else:
        model.eval()
        new = min(16, max(1, seq // 4))
        with torch.no_grad(), torch.autocast("cuda", dtype=half, enabled=mixed):
            if arch == "bert":
                model(input_ids=ids)
            else:
                model.generate(input_ids=ids[:, : seq - new], attention_mask=torch.ones_like(ids[:, : seq - new]),
                               max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0)
    torch.cuda.synchronize()
    res = {
        "allocated_gib": torch.cuda.max_memory_allocated() / GIB,
        "peak_reserved_gib": f"{torch.cuda.max_memory_reserved() / GIB:.4f}",
        "device_used_gib": f"{device_used_gib():.4f}",
        "load_peak_gib": f"{load_peak:.4f}",
        "versions": f"transformers={transformers.__version__}",
    }
    return res


def _config_dir(config_path):
    """AutoConfig wants a folder holding config.json: make one in a temp dir."""
    import tempfile
    d = tempfile.mkdtemp(prefix="picker-cfg-")
    with open(config_path, encoding="utf-8") as src, open(os.path.join(d, "config.json"), "w", encoding="utf-8") as dst:
        dst.write(src.read())
    return d


def _quantize(model, quant, double_quant, half):
    try:
        import bitsandbytes as bnb
    except ImportError:
        raise SkipCase("bitsandbytes not installed")
    import torch
    if quant not in ("nf4", "fp4", "int8"):
        raise SkipCase(f"quant {quant} not supported by this harness")

    def swap(parent):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear) and name not in ("lm_head", "score", "classifier"):
                w = child.weight.data.to(half)
                if quant == "int8":
                    new = bnb.nn.Linear8bitLt(child.in_features, child.out_features, bias=child.bias is not None,
                                              has_fp16_weights=False)
                    new.weight = bnb.nn.Int8Params(w.cpu(), requires_grad=False, has_fp16_weights=False)
                else:
                    new = bnb.nn.Linear4bit(child.in_features, child.out_features, bias=child.bias is not None,
                                            compute_dtype=half, quant_type=quant, compress_statistics=double_quant)
                    new.weight = bnb.nn.Params4bit(w.cpu(), requires_grad=False, quant_type=quant,
                                                   compress_statistics=double_quant)
                if child.bias is not None:
                    new.bias = torch.nn.Parameter(child.bias.data.to(half), requires_grad=False)
                setattr(parent, name, new.cuda())
                del child
            else:
                swap(child)
    for p in model.parameters():
        p.data = p.data.to(half)
    swap(model)
    torch.cuda.empty_cache()
    return model


def make_optimizer(name, params):
    import torch
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-5)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-5)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-5, momentum=0.9)
    if name == "adafactor":
        from transformers.optimization import Adafactor
        return Adafactor(params, lr=1e-5, scale_parameter=False, relative_step=False)
    try:
        import bitsandbytes as bnb
    except ImportError:
        raise SkipCase(f"optimizer {name} needs bitsandbytes")
    if name == "adamw-8bit":
        return bnb.optim.AdamW8bit(params, lr=1e-5)
    if name == "paged-adamw-8bit":
        return bnb.optim.PagedAdamW8bit(params, lr=1e-5)
    raise SkipCase(f"optimizer {name} unknown")


if __name__ == "__main__":
    sys.exit(main())
