#!/usr/bin/python3
"""Tests of tools/train/decode.py: the incremental model and the tool-call session over ctypes.

    /usr/bin/python3 tests/train/test_decode.py [--bin BUILD/bin] [--lib BUILD/lib] [--models BUILD/models]

Checked, on random tiny models whose every tensor is off its initial value:
- feeding a sequence token by token, and in uneven chunks, gives the full batched forward's logits
  at every position (float weights against forward(qat=False); quantised against forward(qat=True,
  exact=True)), maxRel = max|a - ref| / max|ref| within 1e-5;
- with the quantised weights, the logits at every position equal `needle-ref --kv f32 --act f32` on
  the archive needle-pack makes of the model (within 1e-5), also for a sequence longer than
  kv_window with a sink (where the sink changes the logits, so the check can fail);
- refusals (past max_seq_len, an id outside the vocabulary, an empty chunk) leave the state as it was;
- evaluate.py: its exact-match metric, and a whole evaluation (four engines, three small splits) whose
  figures follow from the envelopes it wrote;
- through libneedle_toolcall.so, the quantised model in the C++ session gives the envelope that
  `needle-run --act f32 --kv f32 --batch` gives on the packed archive (prompt ids, reply ids, calls,
  text) for several requests; a refused request gets status 1 and the session's message; a failing
  callback gets status 2 and its exception re-raised.
The session tests need BUILD/models/needle-test.model (scripts/make-test-models.sh).
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "train"))

import cq  # noqa: E402
import decode  # noqa: E402
import model as M  # noqa: E402
import parity  # noqa: E402

BUILD = os.environ.get("NEEDLE_BUILD_DIR", os.path.join(ROOT, "build"))
PATHS = {"bin": os.path.join(BUILD, "bin"), "lib": os.path.join(BUILD, "lib"),
         "models": os.path.join(BUILD, "models")}
TOLERANCE = 1e-5
BITS_MAP = "embedding=4,mhc=4,default=2"


def random_model(geometry, seed: int = 1) -> M.Needle2:
    """A model whose every tensor is off its initial value (so no check passes by symmetry): the CQ
    matrices scaled up, every other tensor moved by N(0, 0.2^2)."""
    net = M.Needle2(M.geometry_from(geometry), cq.BitsMap.parse(BITS_MAP), seed=seed)
    cq_matrices = {"embedding", *M.LAYER_CQ, *M.MHC_CQ, "engram_tables", "engram_key_proj", "engram_value_proj"}
    gen = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for name, p in net.named_parameters():
            if name in cq_matrices:
                p.mul_(3.0)
            else:
                p.add_(0.2 * torch.randn(p.shape, generator=gen))
    return net


def max_rel(a: torch.Tensor, ref: torch.Tensor) -> float:
    a, ref = torch.as_tensor(a, dtype=torch.float32), torch.as_tensor(ref, dtype=torch.float32)
    return float((a - ref).abs().max() / ref.abs().max())


def logits_fed(session: decode.DecodeSession, ids: list, chunks: list, sink: int = 0) -> dict:
    """Feeds `ids` in chunks of the given lengths after reset(sink): {last position of a chunk: logits}."""
    session.reset(sink)
    out, start = {}, 0
    for n in chunks:
        session.feed(ids[start:start + n])
        start += n
        out[start - 1] = session.logits.clone()
    assert start == len(ids), "the chunks must cover the sequence"
    return out


class Incremental(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        cls.net = random_model("tiny")
        cls.g = cls.net.g
        gen = torch.Generator().manual_seed(7)
        cls.ids = torch.randint(0, cls.g.vocab, (60,), generator=gen).tolist()
        cls.long = torch.randint(0, cls.g.vocab, (cls.g.kv_window * 3 + 5,), generator=gen).tolist()

    def full(self, ids, weights, sink=0):
        with torch.no_grad():
            return self.net(torch.tensor([ids]), sink=sink, qat=weights == "quantised", exact=True)[0]

    def check_against_forward(self, ids, chunks, sink=0):
        for weights in decode.WEIGHTS:
            full = self.full(ids, weights, sink)
            fed = logits_fed(decode.DecodeSession(self.net, weights), ids, chunks, sink)
            worst = max(max_rel(logits, full[p]) for p, logits in fed.items())
            self.assertLess(worst, TOLERANCE, f"{weights} weights, chunks {chunks[:6]}...: maxRel {worst:.2e}")

    def test_token_by_token_equals_the_full_forward(self):
        self.check_against_forward(self.ids, [1] * len(self.ids))

    def test_chunks_equal_the_full_forward(self):
        self.check_against_forward(self.ids, [1, 2, 17, 1, 3, 30, 6])

    def test_longer_than_the_window_with_and_without_a_sink(self):
        chunks = [40, 1, 1, 30, 1, 7, 20] + [1] * (len(self.long) - 100)
        self.check_against_forward(self.long, chunks, sink=0)
        self.check_against_forward(self.long, chunks, sink=6)
        # The sink does change the logits past the window (so the checks above can tell them apart).
        self.assertGreater(max_rel(self.full(self.long, "float", 6)[-1], self.full(self.long, "float", 0)[-1]), 1e-2)

    def test_float_and_quantised_weights_differ(self):
        a = logits_fed(decode.DecodeSession(self.net, "float"), self.ids, [len(self.ids)])
        b = logits_fed(decode.DecodeSession(self.net, "quantised"), self.ids, [len(self.ids)])
        self.assertGreater(max_rel(a[len(self.ids) - 1], b[len(self.ids) - 1]), 1e-3)

    def test_logits_only_when_asked(self):
        s = decode.DecodeSession(self.net, "float")
        s.feed(self.ids[:5], want_logits=False)
        self.assertIsNone(s.logits)
        s.feed(self.ids[5:6])
        self.assertLess(max_rel(s.logits, self.full(self.ids[:6], "float")[5]), TOLERANCE)

    def test_refusals_leave_the_state_unchanged(self):
        s = decode.DecodeSession(self.net, "float")
        s.feed(self.ids[:10])
        before = s.logits.clone()
        with self.assertRaisesRegex(ValueError, "token id 512 is outside the vocabulary of 512"):
            s.feed([5, 512])
        with self.assertRaisesRegex(ValueError, r"positions 10\.\.256 pass max_seq_len 256"):
            s.feed([5] * (self.g.max_seq_len - 9))
        with self.assertRaisesRegex(ValueError, "no ids"):
            s.feed([])
        with self.assertRaisesRegex(ValueError, "weights must be one of"):
            decode.DecodeSession(self.net, "int8")
        self.assertEqual(s.position, 10)
        self.assertTrue(torch.equal(s.logits, before))
        s.feed(self.ids[10:20])
        self.assertLess(max_rel(s.logits, self.full(self.ids[:20], "float")[19]), TOLERANCE)

    def test_quantised_weights_equal_needle_ref_at_every_position(self):
        bin_dir = PATHS["bin"]
        with tempfile.TemporaryDirectory() as tmp:
            archive = os.path.join(tmp, "tiny.cact")
            parity.pack(bin_dir, self.net, BITS_MAP, archive)
            session = decode.DecodeSession(self.net, "quantised")
            cases = [(self.ids, 0, [1] * len(self.ids)),
                     (self.long, 0, [50] + [1] * (len(self.long) - 50)),
                     (self.long, 4, [3, 60] + [1] * (len(self.long) - 63))]
            for ids, sink, chunks in cases:
                ref = parity.reference_logits(bin_dir, archive, ids, self.g.vocab, sink)
                fed = logits_fed(session, ids, chunks, sink)
                worst = max(max_rel(logits, ref[p]) for p, logits in fed.items())
                self.assertLess(worst, TOLERANCE, f"{len(ids)} tokens, sink {sink}: maxRel {worst:.2e}")


TOOLS = [
    {"name": "set_timer", "description": "Start a countdown timer.",
     "parameters": {"type": "object", "properties": {"minutes": {"type": "integer", "minimum": 1, "maximum": 600},
                                                     "label": {"type": "string", "maxLength": 12}},
                    "required": ["minutes"]}},
    {"name": "get_weather", "description": "Get the current weather.",
     "parameters": {"type": "object", "properties": {"location": {"type": "string", "maxLength": 10},
                                                     "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                    "required": ["location"]}},
    {"name": "lights.toggle", "description": "Turn the lights on or off.",
     "parameters": {"type": "object", "properties": {"room": {"type": "string", "enum": ["kitchen", "hall"]},
                                                     "on": {"type": "boolean"}}, "required": ["room", "on"]}},
]
# Greedy and sampled (the session samples from the backend's logits with the engine's sampler).
REQUESTS = [
    {"tools": TOOLS, "request": "Set a pasta timer for 12 minutes", "max_tokens": 40},
    {"tools": TOOLS, "request": "How's the sky looking over Kyiv?", "system": "locale: en-GB", "max_tokens": 40,
     "temperature": 1, "seed": 3},
    {"tools": TOOLS[2:], "request": "Kitchen lights off, please", "max_tokens": 40, "temperature": 1, "seed": 1},
    {"tools": TOOLS[:2], "request": "Zoë asks: what's the weather in 北京?", "max_tokens": 48,
     "temperature": 1, "top_k": 40, "seed": 7},
    {"tools": TOOLS, "request": "Timer, 5 minutes", "max_tokens": 48, "temperature": 1.5, "seed": 11},
]


class Session(unittest.TestCase):
    """The C++ session with a DecodeSession backend, against needle-run on the packed archive."""

    @classmethod
    def setUpClass(cls):
        spm = os.path.join(PATHS["models"], "needle-test.model")
        if not os.path.exists(spm):
            raise AssertionError(f"{spm} is missing: run scripts/make-test-models.sh BUILD")
        cls.tmp = tempfile.TemporaryDirectory()
        # The tiny geometry with the test tokenizer's 8192 pieces (the session's mask is vocab wide).
        cls.net = random_model('{"base": "tiny", "vocab": 8192}', seed=2)
        cls.archive = os.path.join(cls.tmp.name, "tiny-spm.cact")
        parity.pack(PATHS["bin"], cls.net, BITS_MAP, cls.archive, spm)
        cls.model = decode.ToolcallModel(os.path.join(PATHS["lib"], "libneedle_toolcall.so"),
                                         decode.archive_tokenizer_blob(cls.archive), cls.net.g)
        cls.session = decode.DecodeSession(cls.net, "quantised")

    @classmethod
    def tearDownClass(cls):
        cls.model.close()
        cls.tmp.cleanup()

    def needle_run(self, requests: list, *flags) -> list:
        batch = os.path.join(self.tmp.name, "requests.jsonl")
        with open(batch, "w", encoding="utf-8") as f:
            for r in requests:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        run = subprocess.run([parity.tool(PATHS["bin"], "needle-run"), "--archive", self.archive, "--batch", batch,
                              *flags], capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        return [json.loads(line) for line in run.stdout.splitlines()]

    def test_envelopes_equal_needle_run_in_f32(self):
        expected = self.needle_run(REQUESTS, "--act", "f32", "--kv", "f32")
        for request, want in zip(REQUESTS, expected):
            status, got = self.model.complete(request, self.session)
            self.assertEqual(status, decode.NEEDLE_TC_OK)
            for key in ("type", "success", "error", "function_calls", "text", "prompt_tokens", "pinned_tokens",
                        "generated_tokens", "forced_tokens", "reply_ids"):
                self.assertEqual(got[key], want[key], f"{request['request']!r}: {key}")
            self.assertEqual(got["confidence"], None)
            self.assertGreater(got["peak_memory_bytes"], 0)
        self.assertGreater(sum(len(e["reply_ids"]) for e in expected), 4 * 10)

    def test_the_prompt_is_the_rendered_template(self):
        status, got = self.model.complete({"tools": TOOLS[:1], "request": "hi", "max_tokens": 5}, self.session)
        self.assertEqual(status, decode.NEEDLE_TC_OK)
        self.assertEqual(got["text"], "<tool_call>[]</tool_call><|im_end|>")
        self.assertEqual(got["function_calls"], [])
        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(model_file=os.path.join(PATHS["models"], "needle-test.model"))
        tools_json = json.dumps(TOOLS[:1], separators=(",", ":"))
        prompt = f"<|im_start|>user\n<tools>{tools_json}</tools>\nhi<|im_end|>\n<|im_start|>assistant\n"
        # The backend was fed the prompt first, then the reply but its last token.
        want = [2] + sp.encode(prompt)
        self.assertEqual(got["prompt_tokens"], len(want))
        fed = self.session.tokens[:self.session.position].tolist()
        self.assertEqual(fed, want + got["reply_ids"][:-1])
        self.assertEqual(got["pinned_tokens"], want.index(sp.piece_to_id("</tools>")) + 1)
        self.assertEqual(self.session.sink, got["pinned_tokens"])

    def test_a_refused_request_gets_the_message(self):
        status, got = self.model.complete({"tools": TOOLS, "request": "x", "temprature": 1}, self.session)
        self.assertEqual(status, decode.NEEDLE_TC_REFUSED)
        self.assertFalse(got["success"])
        self.assertEqual(got["error"], 'request: unknown key "temprature"')
        bad = [{"name": "t", "parameters": {"type": "object", "properties": {"p": {"type": "string",
                                                                               "pattern": "x"}}}}]
        status, got = self.model.complete({"tools": bad, "request": "x"}, self.session)
        self.assertEqual(status, decode.NEEDLE_TC_REFUSED)
        self.assertEqual(got["error"], 'tool "t" parameter "p": "pattern" is not supported')

    def test_a_failing_callback_is_reported_and_the_handle_keeps_working(self):
        class Broken(decode.DecodeSession):
            def feed(self, ids, want_logits=True):
                raise RuntimeError("no model here")
        broken = Broken(self.net, "quantised")
        with self.assertRaisesRegex(decode.BackendError, "no model here"):
            self.model.complete(REQUESTS[0], broken)
        status, got = self.model.complete(REQUESTS[2], self.session)
        self.assertEqual(status, decode.NEEDLE_TC_OK)
        self.assertEqual(got["reply_ids"], self.needle_run(REQUESTS[2:3], "--act", "f32", "--kv", "f32")[0]["reply_ids"])

    def test_a_bad_tokenizer_blob_is_refused(self):
        with self.assertRaisesRegex(ValueError, "needle_tc_model_new: "):
            decode.ToolcallModel(os.path.join(PATHS["lib"], "libneedle_toolcall.so"), b"not a tokenizer", self.net.g)


class ExactMatch(unittest.TestCase):
    """evaluate.py's metric: the same calls in order, arguments as JSON values (numbers by value)."""

    def same(self, a: str, b: str) -> bool:
        import evaluate
        return evaluate.exact_match(evaluate.parse_exact(a), evaluate.parse_exact(b))

    def test_what_counts_as_the_same_call(self):
        gold = '[{"name":"set_timer","arguments":{"minutes":60,"label":"pasta","loud":true}}]'
        self.assertTrue(self.same(gold, gold))
        self.assertTrue(self.same('[{"arguments":{"label":"pasta","loud":true,"minutes":60.0},"name":"set_timer"}]', gold))
        self.assertTrue(self.same('[{"name":"set_timer","arguments":{"minutes":6e1,"label":"pasta","loud":true}}]', gold))
        self.assertTrue(self.same("[]", "[]"))
        for other in ('[{"name":"set_timer","arguments":{"minutes":"60","label":"pasta","loud":true}}]',
                      '[{"name":"set_timer","arguments":{"minutes":60,"label":"Pasta","loud":true}}]',
                      '[{"name":"set_timer","arguments":{"minutes":60,"label":"pasta ","loud":true}}]',
                      '[{"name":"set_timer","arguments":{"minutes":60,"label":"pasta","loud":1}}]',
                      '[{"name":"set_timer","arguments":{"minutes":60.000001,"label":"pasta","loud":true}}]',
                      '[{"name":"set_timer","arguments":{"minutes":60,"label":"pasta"}}]',
                      '[{"name":"set_timer","arguments":{"minutes":60,"label":"pasta","loud":true,"x":null}}]',
                      '[{"name":"setTimer","arguments":{"minutes":60,"label":"pasta","loud":true}}]',
                      '[{"name":"set_timer","arguments":{"minutes":60,"label":"pasta","loud":true},"id":1}]',
                      '[]', gold[:-1] + "," + gold[1:]):
            self.assertFalse(self.same(other, gold), other)
        self.assertFalse(self.same('[{"name":"set_timer","arguments":{"minutes":1}}]', '[{"name":"set_timer","arguments":{"minutes":true}}]'))
        self.assertFalse(self.same('[{"name":"a","arguments":{"v":0}}]', '[{"name":"a","arguments":{"v":false}}]'))
        # 17 significant digits: compared as decimals, not as the nearest doubles
        self.assertFalse(self.same('[{"name":"a","arguments":{"v":0.10000000000000001}}]', '[{"name":"a","arguments":{"v":0.1}}]'))
        self.assertTrue(self.same('[{"name":"a","arguments":{"v":[1,2.50]}}]', '[{"name":"a","arguments":{"v":[1.0,2.5]}}]'))
        self.assertFalse(self.same('[{"name":"a","arguments":{"v":[2.5,1]}}]', '[{"name":"a","arguments":{"v":[1,2.5]}}]'))
        two = '[{"name":"a","arguments":{}},{"name":"b","arguments":{}}]'
        self.assertFalse(self.same('[{"name":"b","arguments":{}},{"name":"a","arguments":{}}]', two))

    def test_the_kind_of_a_wrong_reply(self):
        import evaluate
        gold = evaluate.parse_exact('[{"name":"set_timer","arguments":{"minutes":60,"label":"pasta"}}]')
        kind = lambda reply, g=gold: evaluate.error_kind(None if reply is None else evaluate.parse_exact(reply), g)  # noqa: E731
        self.assertIsNone(kind('[{"name":"set_timer","arguments":{"label":"pasta","minutes":60.0}}]'))
        self.assertEqual(kind(None), "no reply")
        self.assertEqual(kind("[]"), "no call")
        self.assertEqual(kind('[{"name":"x","arguments":{}}]', []), "a call where no tool fits")
        self.assertIsNone(kind("[]", []))
        self.assertEqual(kind('[{"name":"setTimer","arguments":{"minutes":60,"label":"pasta"}}]'), "other tools")
        self.assertEqual(kind('[{"name":"set_timer","arguments":{"minutes":60,"label":"pasta"}},'
                              '{"name":"set_timer","arguments":{"minutes":1}}]'), "other tools")
        self.assertEqual(kind('[{"name":"set_timer","arguments":{"minutes":60}}]'), "the tools, other argument keys")
        self.assertEqual(kind('[{"name":"set_timer","arguments":{"minutes":6,"label":"pasta"}}]'),
                         "the tools and keys, other values")
        self.assertEqual(set(evaluate.ERROR_KINDS), {"no reply", "a call where no tool fits", "no call", "other tools",
                                                     "the tools, other argument keys", "the tools and keys, other values"})

    def test_whether_a_request_names_its_tools(self):
        import evaluate
        names = lambda query, *tools: evaluate.names_its_tools(query, [{"name": t, "arguments": {}} for t in tools])  # noqa: E731
        self.assertTrue(names("Look for hotels in Warsaw", "hotels.find"))
        self.assertTrue(names("book a hotel in Rousk", "bookHotel"))  # camelCase split, plural dropped
        self.assertTrue(names("Show the RUSF stock price", "get_stock_price"))
        self.assertFalse(names("Where is my parcel 1Z99?", "track_package"))
        self.assertFalse(names("JWQ share price?", "stocks.quote"))
        self.assertFalse(names("a hotel, then a recipe", "bookHotel", "track_package"))  # every tool named
        self.assertTrue(names("a hotel, then a package", "bookHotel", "track_package"))
        self.assertFalse(names("go on at 5", "go_on"))  # words of one or two letters do not count
        self.assertIsNone(evaluate.names_its_tools("that's all", []))
        self.assertEqual(evaluate.name_words("playEpisode fitness.record"), {"play", "episode", "fitnes", "record"})

    def test_the_request_of_an_example(self):
        import evaluate
        ex = {"tools": TOOLS[:1], "query": "Set a timer", "system": "", "calls": []}
        self.assertEqual(evaluate.request_of(ex, 99), {"tools": TOOLS[:1], "request": "Set a timer", "max_tokens": 99})
        ex["system"] = "locale: en-GB"
        self.assertEqual(evaluate.request_of(ex, 99)["system"], "locale: en-GB")
        self.assertNotIn("no_call_bias", evaluate.request_of(ex, 99, 0.0))
        self.assertEqual(evaluate.request_of(ex, 99, 1.5)["no_call_bias"], 1.5)
        self.assertNotIn("span_strings", evaluate.request_of(ex, 99, 1.5))
        self.assertIs(evaluate.request_of(ex, 99, 0.0, True)["span_strings"], True)
        self.assertNotIn("steer_named", evaluate.request_of(ex, 99, 1.5, True, 2.0, 8.0))
        self.assertIs(evaluate.request_of(ex, 99, 1.5, True, 2.0, 8.0, True)["steer_named"], True)
        self.assertEqual(evaluate.request_of(ex, 99, 1.5, True, 2.0, 8.0)["no_call_named"], 8.0)


# The gold calls of the evaluation tests' tiny splits: A sets a timer, B turns the hall lights off, C
# calls nothing.
SPLIT_GOLD = {"A": [{"name": "set_timer", "arguments": {"minutes": 12}}],
              "B": [{"name": "lights.toggle", "arguments": {"room": "hall", "on": False}}], "C": []}


def write_splits(data: str, queries: list, first_system: str = "") -> None:
    """DATA/{A,B,C}.jsonl: one example per query in each split, every one offering TOOLS with its
    split's SPLIT_GOLD calls; the first example's system turn is `first_system`."""
    os.makedirs(data)
    for split, calls in SPLIT_GOLD.items():
        with open(os.path.join(data, f"{split}.jsonl"), "w", encoding="utf-8") as f:
            for k, query in enumerate(queries):
                ex = {"id": f"{split}-{k:06d}", "split": split, "family": "timer", "system": "" if k else first_system,
                      "tools": TOOLS, "query": query, "calls": calls}
                f.write(json.dumps(ex) + "\n")


class Evaluation(unittest.TestCase):
    """evaluate.py end to end on a random tiny model: a checkpoint, its archive, three small splits."""

    def test_every_engine_answers_every_request_and_the_figures_follow_from_the_envelopes(self):
        import evaluate
        build = os.path.dirname(PATHS["bin"])
        missing = [f for f in ("engine.wasm", "toolcall.mjs") if not os.path.exists(os.path.join(build, f))]
        if missing:
            self.skipTest(f"needs {', '.join(missing)} in {build} (scripts/build.sh makes them)")
        spm = os.path.join(PATHS["models"], "needle-test.model")
        net = random_model('{"base": "tiny", "vocab": 8192}', seed=4)
        with tempfile.TemporaryDirectory() as tmp:
            checkpoint = os.path.join(tmp, "checkpoint.pt")
            torch.save({"model": net.state_dict(), "geometry": json.loads(net.g.to_json()), "bits_map": BITS_MAP},
                       checkpoint)
            archive = os.path.join(tmp, "model.cact")
            parity.pack(PATHS["bin"], net, BITS_MAP, archive, spm)
            data = os.path.join(tmp, "data")
            write_splits(data, ["Set a pasta timer for 12 minutes", "Hall lights off", "hi"], first_system="x")
            out = os.path.join(tmp, "eval")
            argv = ["--archive", archive, "--checkpoint", checkpoint, "--data", data, "--build", build, "--out", out,
                    "--count", "2", "--max-tokens", "24", "--tokenizer", spm, "--threads", "1",
                    "--engines", "float,needle-run,wasm,needle-run-f32"]
            import contextlib
            import io
            with contextlib.redirect_stdout(io.StringIO()) as printed:
                self.assertEqual(evaluate.main(argv), 0)
            self.assertIn("needle-run = wasm: calls 6/6 (100.0%)", printed.getvalue())
            with open(os.path.join(out, "results.json"), encoding="utf-8") as f:
                results = json.load(f)
            self.assertEqual(results["engines"], ["float", "needle-run", "wasm", "needle-run-f32"])
            self.assertIs(results["span_strings"], True)  # the default: every request asks for span strings
            with open(os.path.join(out, "requests.jsonl"), encoding="utf-8") as f:
                self.assertEqual([json.loads(line).get("span_strings") for line in f], [True] * 6)
            self.assertEqual(results["agreement"]["reply_ids"]["count"], 6)
            self.assertEqual(results["prompt_ids_as_trained"]["total"], 6)
            wrong = {e: sum(e in m["wrong_in"] for m in results["mismatches"]) for e in results["engines"]}
            for engine in results["engines"]:  # every wrong reply has one kind
                self.assertEqual(sum(n for per in results["error_kinds"][engine].values() for n in per.values()),
                                 wrong[engine], engine)
            for engine in results["engines"]:
                with open(os.path.join(out, f"envelopes-{engine}.jsonl"), encoding="utf-8") as f:
                    envelopes = [json.loads(line) for line in f]
                self.assertEqual(len(envelopes), 6)
                right = 0
                for k, envelope in enumerate(envelopes):
                    right += envelope["function_calls"] == SPLIT_GOLD["ABC"[k // 2]]
                figures = results["exact_match"][engine]
                self.assertEqual([figures[s]["exact"]["total"] for s in "ABC"], [2, 2, 2])
                self.assertEqual(sum(figures[s]["exact"]["count"] for s in "ABC"), right, engine)
                self.assertEqual(wrong[engine], 6 - right, engine)
                # of the two queries asked, one names A's set_timer ("Set a pasta timer"), one B's lights.toggle
                naming = results["by_naming"][engine]
                self.assertEqual(set(naming), {"A", "B"})
                for s in "AB":
                    self.assertEqual([naming[s][w]["total"] for w in ("named", "not named")], [1, 1])
                    self.assertEqual(naming[s]["named"]["count"] + naming[s]["not named"]["count"],
                                     figures[s]["exact"]["count"], engine)
                self.assertGreater(results["timing"][engine]["mean_prompt_tokens"], 0)
            self.assertTrue(os.path.exists(os.path.join(out, "mismatches.md")))
            self.assertEqual(results["archive"]["bytes"], os.path.getsize(archive))


class Calibration(unittest.TestCase):
    """calibrate.py on a random tiny model: the validation range, one needle-run evaluation per bias, the
    best total chosen, and evaluate.py taking it from beside the archive."""

    def test_the_bias_with_the_most_validation_matches_is_the_archives(self):
        import calibrate
        import contextlib
        import io
        import evaluate
        build = os.path.dirname(PATHS["bin"])
        spm = os.path.join(PATHS["models"], "needle-test.model")
        net = random_model('{"base": "tiny", "vocab": 8192}', seed=5)
        with tempfile.TemporaryDirectory() as tmp:
            archive = os.path.join(tmp, "model.cact")
            parity.pack(PATHS["bin"], net, BITS_MAP, archive, spm)
            data = os.path.join(tmp, "data")
            write_splits(data, ["not asked", "Set a pasta timer for 12 minutes", "Hall lights off"])
            with contextlib.redirect_stdout(io.StringIO()) as printed:
                self.assertEqual(calibrate.main(["--archive", archive, "--data", data, "--build", build,
                                                 "--skip", "1", "--count", "2", "--biases", "100,0"]), 0)
            out = os.path.join(tmp, "calibration")
            with open(os.path.join(out, "calibration.json"), encoding="utf-8") as f:
                calibration = json.load(f)
            self.assertEqual((calibration["skip"], calibration["count"]), (1, 2))
            # At 100 every reply is [] (the two of C right, none of A or B); at 0 whatever the model says.
            self.assertEqual(calibration["by_bias"]["100"], {"A": 0, "B": 0, "C": 2, "total": 2})
            for bias in ("0", "100"):
                with open(os.path.join(out, f"bias-{bias}", "results.json"), encoding="utf-8") as f:
                    results = json.load(f)
                self.assertEqual(results["skip"], 1)
                self.assertEqual(results["no_call_bias"], float(bias))
                self.assertEqual(calibration["by_bias"][bias], calibrate.exact_by_split(results))
                with open(os.path.join(out, f"bias-{bias}", "requests.jsonl"), encoding="utf-8") as f:
                    asked = [json.loads(line)["request"] for line in f]
                self.assertEqual(asked, ["Set a pasta timer for 12 minutes", "Hall lights off"] * 3)
            totals = {float(b): row["total"] for b, row in calibration["by_bias"].items()}
            best = max(sorted(totals), key=lambda b: totals[b])  # the smaller on a tie
            if calibration["no_call_doubt"] == 0 and calibration["no_call_named"] == 0 and not calibration["steer_named"]:
                self.assertEqual(calibration["no_call_bias"], best)
            self.assertIn("<- chosen", printed.getvalue())
            self.assertEqual(evaluate.calibrated_decision(archive)[:4],
                             (calibration["no_call_bias"], calibration["no_call_doubt"], calibration["no_call_named"],
                              calibration["steer_named"]))
            # The doubt: one evaluation at bias -100 (a call every time, with its margin and doubt), from
            # which every (bias, weight) is worked out; at weight 0 that gives the evaluated counts again
            # (calibrate.py stops otherwise), and at bias 100 every weight still gives C's two alone.
            with open(os.path.join(out, "forced", "results.json"), encoding="utf-8") as f:
                self.assertEqual(json.load(f)["no_call_bias"], -100.0)
            self.assertEqual(sorted(calibration["by_doubt"], key=float), ["0.5", "1", "1.5", "2", "2.5", "3", "4"])
            for weight, rows in calibration["by_doubt"].items():
                self.assertEqual(rows["100"], {"A": 0, "B": 0, "C": 2, "total": 2}, weight)
            # The named credit, worked out from the same forced calls with every weight (0 too): at bias 100
            # a credit of 8 or less cannot open the list, so C's two alone again; at weight 0 and bias 0 a
            # credit keeps every forced call the request names (none of C's can be right then).
            self.assertEqual(sorted(calibration["by_named"], key=float), ["2", "4", "6", "8"])
            for credit, weights in calibration["by_named"].items():
                self.assertEqual(sorted(weights, key=float), ["0", "0.5", "1", "1.5", "2", "2.5", "3", "4"])
                for weight, rows in weights.items():
                    self.assertEqual(rows["100"], {"A": 0, "B": 0, "C": 2, "total": 2}, (credit, weight))
            # The steer: its own forced calls (with steer_named), every credit from 0 worked out from them.
            with open(os.path.join(out, "forced-steered", "results.json"), encoding="utf-8") as f:
                self.assertIs(json.load(f)["steer_named"], True)
            self.assertEqual(sorted(calibration["by_steered"], key=float), ["0", "2", "4", "6", "8"])
            for credit, weights in calibration["by_steered"].items():
                for weight, rows in weights.items():
                    self.assertEqual(rows["100"], {"A": 0, "B": 0, "C": 2, "total": 2}, (credit, weight))
            rows = {"0": calibration["by_bias"]} | {w: r for w, r in calibration["by_doubt"].items()}
            grid = [row["total"] for r in rows.values() for row in r.values()] + \
                [row["total"] for table in ("by_named", "by_steered") for weights in calibration[table].values()
                 for r in weights.values() for row in r.values()]
            bias, doubt = f"{calibration['no_call_bias']:g}", f"{calibration['no_call_doubt']:g}"
            named = f"{calibration['no_call_named']:g}"
            if calibration["steer_named"]:
                chosen = calibration["by_steered"][named][doubt][bias]
            else:
                chosen = calibration["by_named"][named][doubt][bias] if named != "0" else rows[doubt][bias]
            self.assertEqual(chosen["total"], max(grid))
            # --reuse: the biases evaluated before for this archive, data and requests are read, a new
            # one is evaluated; an earlier evaluation of other requests is evaluated again.
            bias0 = os.path.join(out, "bias-0", "results.json")
            with open(bias0, encoding="utf-8") as f:
                other = json.load(f)
            other["skip"] = 2
            with open(bias0, "w", encoding="utf-8") as f:
                json.dump(other, f)
            reuse = ["--archive", archive, "--data", data, "--build", build, "--skip", "1", "--count", "2",
                     "--biases", "100,0,50", "--reuse"]
            with contextlib.redirect_stdout(io.StringIO()) as printed:
                self.assertEqual(calibrate.main(reuse), 0)
            said = printed.getvalue()
            self.assertIn("bias 100: the earlier evaluation", said)
            self.assertNotIn("bias 0: the earlier evaluation", said)
            self.assertNotIn("bias 50: the earlier evaluation", said)
            with open(os.path.join(out, "calibration.json"), encoding="utf-8") as f:
                widened = json.load(f)
            self.assertEqual(sorted(widened["by_bias"]), ["0", "100", "50"])
            for bias in ("0", "100"):
                self.assertEqual(widened["by_bias"][bias], calibration["by_bias"][bias])
            with open(bias0, encoding="utf-8") as f:
                self.assertEqual(json.load(f)["skip"], 1)  # evaluated again
            with open(archive, "ab") as f:  # another archive: its calibration is not this one's
                f.write(b"\0")
            self.assertEqual(evaluate.calibrated_decision(archive), (0.0, 0.0, 0.0, False, "none"))
            # An archive the page lists (by sha256) without a calibration beside it: the page's bias.
            listed = os.path.join(tmp, "models.json")
            with open(listed, "w", encoding="utf-8") as f:
                json.dump([{"name": "other", "sha256": "0" * 64, "no_call_bias": 3},
                           {"name": "this", "sha256": evaluate.file_facts(archive)["sha256"], "no_call_bias": 0.75,
                            "no_call_doubt": 1.5, "no_call_named": 6, "steer_named": True}], f)
            self.assertEqual(evaluate.calibrated_decision(archive, listed),
                             (0.75, 1.5, 6.0, True, os.path.relpath(listed)))
            os.remove(os.path.join(out, "calibration.json"))
            with open(archive, "rb") as f:
                unlisted = f.read()[:-1]
            with open(archive, "wb") as f:  # the calibrated archive again, now without its calibration
                f.write(unlisted)
            self.assertEqual(evaluate.calibrated_decision(archive, listed), (0.0, 0.0, 0.0, False, "none"))

    def test_the_shipped_archive_is_asked_with_the_pages_bias(self):
        import evaluate
        with open(evaluate.MODELS_JSON, encoding="utf-8") as f:
            shipped = json.load(f)[0]
        archive = os.path.join(evaluate.ROOT, shipped["url"])  # the page's models/ is the repository's
        self.assertEqual(evaluate.calibrated_decision(archive),
                         (float(shipped["no_call_bias"]), float(shipped.get("no_call_doubt", 0.0)),
                          float(shipped.get("no_call_named", 0.0)), shipped.get("steer_named") is True,
                          os.path.relpath(evaluate.MODELS_JSON)))

    def test_the_forced_calls_are_decided_as_the_session_decides(self):
        import calibrate
        gold_call = [{"name": "t", "arguments": {}}]
        rows = [  # (split, gold, margin, doubt, the forced calls, whether the request names them)
            ("A", gold_call, -2.0, 0.5, gold_call, True),   # empty at bias > 2; withdrawn at -2 + b + 0.5 w > 0
            ("C", [], -1.0, 2.0, gold_call, False),         # right when empty: bias > 1, or -1 + b + 2 w > 0
            ("B", gold_call, None, None, gold_call, True),  # no decision: the reply stands at any setting
            ("C", [], None, None, [], None),
        ]
        self.assertEqual(calibrate.worked_out(rows, 0.0, 0.0), {"A": 1, "B": 1, "C": 1, "total": 3})
        self.assertEqual(calibrate.worked_out(rows, 1.5, 0.0), {"A": 1, "B": 1, "C": 2, "total": 4})
        self.assertEqual(calibrate.worked_out(rows, 2.5, 0.0), {"A": 0, "B": 1, "C": 2, "total": 3})
        self.assertEqual(calibrate.worked_out(rows, 0.0, 0.4), {"A": 1, "B": 1, "C": 1, "total": 3})  # -1 + 0.8 < 0
        self.assertEqual(calibrate.worked_out(rows, 0.0, 0.6), {"A": 1, "B": 1, "C": 2, "total": 4})  # -2 + 0.3 < 0
        self.assertEqual(calibrate.worked_out(rows, 1.0, 2.5), {"A": 0, "B": 1, "C": 2, "total": 3})  # -1 + 1.25 > 0
        # The named credit: the list opens unless margin + bias - credit > 0, and a named call is kept
        # unless margin + bias + w x doubt - credit > 0; an unnamed call gets no credit.
        # A's call is named: at bias 2.5 (empty alone) a credit of 1 opens the list and keeps it.
        self.assertEqual(calibrate.worked_out(rows, 2.5, 0.0, 1.0), {"A": 1, "B": 1, "C": 2, "total": 4})
        # C's is not: at bias 1.5 the credit opens its list (-1 + 1.5 - 1 <= 0) and -1 + 1.5 > 0
        # withdraws the call; a smaller credit leaves the list closed (right either way).
        self.assertEqual(calibrate.worked_out(rows, 1.5, 0.0, 1.0), {"A": 1, "B": 1, "C": 2, "total": 4})
        # With the doubt: at (1, 2.5) A's call is withdrawn (-2 + 1 + 1.25 > 0); a credit of 0.5 keeps it.
        self.assertEqual(calibrate.worked_out(rows, 1.0, 2.5, 0.5), {"A": 1, "B": 1, "C": 2, "total": 4})
        self.assertEqual(calibrate.worked_out(rows, 1.0, 2.5, 0.2), {"A": 0, "B": 1, "C": 2, "total": 3})


def main() -> int:
    argv = sys.argv[1:]
    for key in PATHS:
        flag = f"--{key}"
        if flag in argv:
            k = argv.index(flag)
            PATHS[key] = argv[k + 1]
            del argv[k:k + 2]
    torch.set_num_threads(1)
    program = unittest.main(argv=[sys.argv[0], *argv], exit=False)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
