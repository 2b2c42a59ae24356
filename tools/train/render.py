"""The Needle 2 prompt and reply text of a training example, and their token ids.

This is the interface between the data and the trainer (docs/training-data.md, "The example format");
it follows the prompt template of /work/shared/design/needle2-cact.md section 4:

    prompt: [<|im_start|>system\\n{system}<|im_end|>\\n]<|im_start|>user\\n<tools>{tools_json}</tools>\\n{query}<|im_end|>\\n<|im_start|>assistant\\n
    target: <tool_call>{calls_json}</tool_call><|im_end|>

Both JSON texts are compact (separators "," and ":") with Python's ASCII escaping. The model answers
straight away, without <think>, as the real model does on easy requests.
"""

import json

BOS_ID = 2
EOS_ID = 1


def ordered_tool(tool):
    """`tool` with its keys in the order name, description, parameters{type, properties, required,
    then any other key in input order}."""
    params = tool["parameters"]
    head = [k for k in ("type", "properties", "required") if k in params]
    ordered_params = {k: params[k] for k in head}
    ordered_params.update((k, v) for k, v in params.items() if k not in ordered_params)
    out = {"name": tool["name"], "description": tool["description"], "parameters": ordered_params}
    out.update((k, v) for k, v in tool.items() if k not in out)
    return out


def tools_json(tools):
    """The tools as they appear between <tools> and </tools>."""
    return json.dumps([ordered_tool(t) for t in tools], separators=(",", ":"), ensure_ascii=True)


def prompt_text(ex):
    """The prompt up to and including the assistant turn's header."""
    system = ex.get("system") or ""
    head = f"<|im_start|>system\n{system}<|im_end|>\n" if system else ""
    return (f"{head}<|im_start|>user\n<tools>{tools_json(ex['tools'])}</tools>\n{ex['query']}<|im_end|>\n"
            "<|im_start|>assistant\n")


def target_text(ex):
    """The reply the loss is on: the calls (or []) and the end of the turn."""
    calls = json.dumps(ex["calls"], separators=(",", ":"), ensure_ascii=True)
    return f"<tool_call>{calls}</tool_call><|im_end|>"


def encode_example(sp, ex):
    """(prompt_ids, target_ids) for a sentencepiece.SentencePieceProcessor `sp`: the prompt starts
    with BOS; the target is encoded separately (so it starts with the dummy-prefix piece) and ends
    with EOS."""
    prompt_ids = [BOS_ID] + sp.encode(prompt_text(ex))
    target_ids = sp.encode(target_text(ex)) + [EOS_ID]
    return prompt_ids, target_ids
