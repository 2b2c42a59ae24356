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
TOOLS_END = "</tools>"  # the marker that ends the part of the prompt a group's examples share


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
    return [BOS_ID] + sp.encode(prompt_text(ex)), encode_target(sp, ex)


def encode_target(sp, ex):
    """The reply's ids: its own text's pieces (so it starts with the dummy-prefix piece), then EOS."""
    return sp.encode(target_text(ex)) + [EOS_ID]


def prompt_head_and_tail(ex):
    """prompt_text(ex) cut after the </tools> marker: the head (system turn and tools, which the
    examples of a data.py group share) and the tail (the request and the assistant header)."""
    text = prompt_text(ex)
    cut = text.index(TOOLS_END) + len(TOOLS_END)
    return text[:cut], text[cut:]


def encode_sampled(sp, text, dropout, after_tools_end=False):
    """sp.encode(text) with BPE dropout: SentencePiece's sampling, which for a BPE model skips each
    merge with probability `dropout` (0 = the usual pieces). With after_tools_end the text is encoded
    as the continuation of a prompt head that ends in </tools>: without the dummy-prefix piece that
    starts a text of its own. encode_sampled(head) + encode_sampled(tail, after_tools_end=True) with
    dropout 0 is exactly sp.encode(head + tail) (tested on the training data)."""
    options = {"enable_sampling": True, "alpha": dropout, "nbest_size": -1} if dropout > 0 else {}
    if not after_tools_end:
        return sp.encode(text, **options)
    ids = sp.encode(TOOLS_END + text, **options)
    lead = [sp.id_to_piece(i) for i in ids[:2]]
    if lead != ["\u2581", TOOLS_END]:
        raise ValueError(f"encode_sampled: {TOOLS_END} + text began with pieces {lead}, not the "
                         f"dummy prefix and the marker")
    return ids[2:]


def encode_example_dropout(sp, ex, dropout, head=None):
    """encode_example's (prompt_ids, target_ids) with BPE dropout on the prompt (the reply keeps the
    usual pieces: the model is taught to answer as it will be read), and the head it used as
    (head_text, head_ids). Pass the previous example's head back as `head`: when this example's head
    text is the same, its pieces are reused, so a group's prompts still share their beginning."""
    head_text, tail_text = prompt_head_and_tail(ex)
    if head is None or head[0] != head_text:
        head = (head_text, encode_sampled(sp, head_text, dropout))
    prompt_ids = [BOS_ID] + head[1] + encode_sampled(sp, tail_text, dropout, after_tools_end=True)
    return prompt_ids, encode_target(sp, ex), head
