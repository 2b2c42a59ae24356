"""Invented tools: procedurally made tools with made-up names, and requests built from their schema.

An invented tool is a verb and a noun ("polish" + "lantern", or pseudo-words such as "zorbify" +
"flemwick") with 0 to 4 parameters. Its name is built from them in one of several styles
(polish_lantern, polishLantern, lantern.polish, or an opaque code whose description carries the verb
and noun). The request names the verb and the noun and gives each parameter by the words of its name
("max depth 7" for max_depth), or of its description when the key is opaque (p2: "Max depth"). The
model can only get these right by reading the tools, which is the point.

Vocabulary (verbs, nouns, parameter words) never overlaps a family's words (families.FAMILY_WORDS),
so an invented tool never fits a family's request, and one fifth of it is held out for split A.
"""

import slots as S
import wordlists as W
from families import B_WORDS, FAMILY_WORDS, HELD_VALUES, apply_held_values, name_words
from slots import WORDS_P, SlotValue, Template, Values, decimal_text, json_number, log_uniform, pick, quote, say_int, weighted


def _clean(items, banned):
    return [w for w in dict.fromkeys(items) if not (set(name_words(w)) & banned)]


class Vocab:
    """The invented-tool vocabulary of one side of the holdout (train, or held out for split A)."""

    def __init__(self, held):
        pick = 1 if held else 0
        self.held = held
        verbs = W.split_values(_clean(W.INVENTED_VERBS, FAMILY_WORDS))
        nouns = W.split_values(_clean(W.INVENTED_NOUNS, FAMILY_WORDS))
        # A word held out as a verb is held out as a noun too ("stamp", "seal"), and vice versa.
        self.held_words = set(verbs[1]) | set(nouns[1])
        if held:
            self.verbs, self.nouns = verbs[1], nouns[1]
        else:
            self.verbs = [w for w in verbs[0] if w not in self.held_words]
            self.nouns = [w for w in nouns[0] if w not in self.held_words]
        self.text_params = W.split_values(_clean(W.INVENTED_TEXT_PARAMS, B_WORDS))[pick]
        self.number_params = W.split_values(_clean(W.INVENTED_NUMBER_PARAMS, B_WORDS))[pick]
        self.bool_words = W.split_values(_clean(W.INVENTED_BOOL_WORDS, B_WORDS))[pick]
        self.adjectives = _clean(W.INVENTED_ADJECTIVES, B_WORDS)
        self.values = VALUES


# The values of invented tools' string parameters: curated words, codes and phrases (held out for
# split A one in five, like the families' lists), or built from the word source or pseudo-words. A
# fifth of the usual curated share: invented requests are many (30%) and the list is short.
VALUES = Values(_clean(W.INVENTED_STRING_VALUES + W.INVENTED_PHRASES, B_WORDS), S.invented_value, free=True,
                curated_share=0.2)
HELD_VALUES.update(VALUES.held)
VALUES.train = [v for v in VALUES.train if v not in HELD_VALUES]
apply_held_values()


def third_person(verb):
    """polish -> polishes, carry -> carries, zorbify -> zorbifies, tune -> tunes."""
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    if verb.endswith(("s", "x", "z", "ch", "sh")):
        return verb + "es"
    return verb + "s"


plural = third_person  # the same spelling rule: lantern -> lanterns, glass -> glasses, berry -> berries


HELD_WORDS = set()  # filled below: pseudo-words never coincide with held-out vocabulary


def pseudo_word(rng, endings):
    """A pronounceable made-up word: one or two syllables and an ending ("flemwick", "zorbify")."""
    word = pick(rng, W.PSEUDO_ONSETS) + pick(rng, W.PSEUDO_VOWELS) + pick(rng, W.PSEUDO_CODAS)
    if rng.random() < 0.3:
        word += pick(rng, W.PSEUDO_ONSETS) + pick(rng, W.PSEUDO_VOWELS)
    word += pick(rng, endings)
    if not 4 <= len(word) <= 10 or word in HELD_WORDS or set(name_words(word)) & FAMILY_WORDS:
        return pseudo_word(rng, endings)
    return word


def _camel(words):
    return words[0] + "".join(w.capitalize() for w in words[1:])


class InventedParam:
    """One parameter: its key, the words a request uses for it, its type, enum and whether required."""

    __slots__ = ("key", "words", "type", "enum", "required", "desc", "minimum", "maximum")

    def __init__(self, key, words, type, required, enum=None, desc=None, minimum=None, maximum=None):
        self.key, self.words, self.type, self.required = key, words, type, required
        self.enum, self.desc, self.minimum, self.maximum = enum, desc, minimum, maximum

    def schema(self):
        s = {"type": self.type}
        if self.desc:
            s["description"] = self.desc
        if self.enum:
            s["enum"] = list(self.enum)
        if self.minimum is not None:
            s["minimum"] = self.minimum
            s["maximum"] = self.maximum
        return s


class InventedTool:
    """A made-up tool: verb, noun, name, description and parameters."""

    def __init__(self, verb, noun, name, description, params):
        self.verb, self.noun, self.name, self.description, self.params = verb, noun, name, description, params
        self.key = ("invented", verb, noun)

    def tool(self):
        return {"name": self.name, "description": self.description,
                "parameters": {"type": "object",
                               "properties": {p.key: p.schema() for p in self.params},
                               "required": [p.key for p in self.params if p.required]}}


DESCRIPTIONS = ["{V3} a {n}.", "{V} a {n}.", "{V3} the given {n}.", "{V} one {n} with options.",
                "Use this to {v} a {n}.", "{V3} a {n} by its settings.", "{V} the selected {n}."]


def _name(rng, verb, noun, style):
    if style == "snake":
        return f"{verb}_{noun}"
    if style == "camel":
        return _camel([verb, noun])
    if style == "dotted":
        return f"{noun}.{verb}"
    if style == "noun_first":
        return f"{noun}_{verb}"
    if style == "prefixed":
        return f"{pick(rng, ('do', 'run', 'api', 'svc'))}_{verb}_{noun}"
    letters = "abcdefghjkmnpqrstuvwxyz"
    while True:
        code = pick(rng, ("op", "fn", "act", "tool", "x")) + "_" + "".join(
            pick(rng, letters + "0123456789") for _ in range(pick(rng, (2, 3, 4))))
        # Random letters can spell a word ("fn_buff"): never a held-out, family or split-B one.
        if not set(name_words(code)) & (HELD_WORDS | FAMILY_WORDS | B_WORDS):
            return code


def _param(rng, vocab, camel, used):
    """One invented parameter with a key not in `used`."""
    ptype = weighted(rng, ("string", "integer", "number", "boolean", "enum"), (35, 25, 10, 15, 15))
    if ptype == "boolean":
        words = pick(rng, vocab.bool_words).split("_")
    else:
        pool = vocab.number_params if ptype in ("integer", "number") else vocab.text_params
        words = pick(rng, pool).split("_")
        if rng.random() < 0.2:
            words.insert(0, pick(rng, W.INVENTED_PARAM_PREFIXES))
    key = _camel(words) if camel else "_".join(words)
    desc = None
    if rng.random() < 0.1:
        # An opaque key: only the description says what the parameter is.
        key = pick(rng, ("p", "arg", "opt", "x", "field")) + str(len(used) + 1)
        desc = " ".join(words).capitalize()
    elif rng.random() < 0.15:
        desc = f"The {' '.join(words)} to use"
    if key in used or any(p.words == words for p in used.values()):
        return None
    enum = None
    minimum = maximum = None
    if ptype == "enum":
        enum = rng.sample(vocab.adjectives, rng.randint(2, 4))
        ptype = "string"
    elif ptype == "integer" and rng.random() < 0.2:
        minimum, maximum = 0, pick(rng, (10, 100, 1000))
    return InventedParam(key, words, ptype, rng.random() < 0.6, enum, desc, minimum, maximum)


def invent(rng, vocab, verb=None, noun=None):
    """A new invented tool; `verb` or `noun` may be given (for near-miss distractors)."""
    pseudo = rng.random() < 0.3
    if verb is None:
        verb = pseudo_word(rng, W.PSEUDO_VERB_ENDINGS) if pseudo else pick(rng, vocab.verbs)
    if noun is None:
        noun = pseudo_word(rng, W.PSEUDO_NOUN_ENDINGS) if pseudo else pick(rng, vocab.nouns)
    style = weighted(rng, ("snake", "camel", "dotted", "noun_first", "prefixed", "opaque"),
                     (35, 20, 15, 10, 10, 10))
    name = _name(rng, verb, noun, style)
    desc = pick(rng, DESCRIPTIONS).format(V3=third_person(verb).capitalize(), V=verb.capitalize(),
                                           v=verb, n=noun)
    params = {}
    for _ in range(weighted(rng, (0, 1, 2, 3, 4), (8, 30, 32, 20, 10))):
        p = _param(rng, vocab, style == "camel", params)
        if p is not None:
            params[p.key] = p
    return InventedTool(verb, noun, name, desc, list(params.values()))


# --- requests ----------------------------------------------------------------------------------

# "{vp}" is the verb phrase ("polish the lantern"), "{plist}" the parameter phrases.
TEMPLATES = ["{vp} with {plist}", "{vp}: {plist}", "{vp}, {plist}", "{vp} using {plist}",
             "{vp} ({plist})", "please {vp} with {plist}", "can you {vp} with {plist}?",
             "I want to {vp}, {plist}", "{vp}, options: {plist}", "{vp} - {plist}"]
TEMPLATES_NO_PARAMS = ["{vp}", "please {vp}", "can you {vp}?", "I need to {vp}", "{vp} now"]
HELD_TEMPLATES = ["kindly arrange to {vp}, specifying {plist}", "next task is to {vp} where {plist}",
                  "time to {vp}; parameters: {plist}"]
HELD_TEMPLATES_NO_PARAMS = ["kindly arrange to {vp}", "it's time to {vp} for me"]


# Requests that name the tool's noun and not its verb (data.py --invented-nouns, training only), as
# split B's requests often do ("JWQ share price?"). "{vp}" is then a noun phrase ("the lantern",
# "lanterns"); every frame is a question or statement, so it never joins a two-call request.
NOUN_TEMPLATES = ["{vp} with {plist}?", "{vp}, {plist}?", "I need {vp}: {plist}", "{vp} please, {plist}",
                  "what about {vp} with {plist}?", "{plist} for {vp}?", "got {vp}? {plist}"]
NOUN_TEMPLATES_NO_PARAMS = ["{vp}?", "{vp} please", "I need {vp}", "what about {vp}?", "{vp}, now"]


def _templates(texts, held):
    kinds = [("other" if t.endswith("?") or not t.startswith("{vp}") else "imp") for t in texts]
    return [Template(t, k, "invented", held) for t, k in zip(texts, kinds)]


REQUEST_TEMPLATES = {(False, True): _templates(TEMPLATES, False),
                     (False, False): _templates(TEMPLATES_NO_PARAMS, False),
                     (True, True): _templates(HELD_TEMPLATES, True),
                     (True, False): _templates(HELD_TEMPLATES_NO_PARAMS, True)}


def _article(word):
    return "an" if word[:1] in "aeiou" else "a"


def _value_phrase(rng, vocab, p):
    """(phrase for the request, argument value) for parameter p."""
    w = " ".join(p.words)
    if p.type == "boolean":
        value = rng.random() < 0.5
        on, off = pick(rng, (("on", "off"), ("enabled", "disabled"), ("true", "false")))
        form = pick(rng, ("{w} {s}", "{w}: {s}", "turn {w} {s}")) if on == "on" else \
            pick(rng, ("{w} {s}", "{w}: {s}", "{w} set to {s}"))
        return form.format(w=w, s=on if value else off), value
    if p.enum:
        value = pick(rng, p.enum)
        form = pick(rng, ("{w} {v}", "{v} {w}", "{w} set to {v}", "{w}: {v}"))
        return form.format(w=w, v=value), value
    if p.type == "integer":
        hi = p.maximum if p.maximum is not None else pick(rng, (20, 100, 999, 99999))
        n = log_uniform(rng, p.minimum or 0, hi)
        form = pick(rng, ("{w} {n}", "{w} set to {n}", "{a} {w} of {n}", "{w}: {n}", "{w} = {n}"))
        return form.format(w=w, a=_article(w), n=say_int(rng, n, WORDS_P)), n
    if p.type == "number":
        scale = pick(rng, (10, 100, 1000, 100000))
        text = decimal_text(rng.uniform(0, scale), pick(rng, (1, 2, 3))) if rng.random() < 0.7 \
            else str(log_uniform(rng, 0, scale))
        form = pick(rng, ("{w} {n}", "{w} set to {n}", "{a} {w} of {n}", "{w}: {n}"))
        return form.format(w=w, a=_article(w), n=text), json_number(text)
    value = vocab.values.draw(rng, vocab.held)
    written = value if (" " not in value and "," not in value and rng.random() < 0.6) else quote(rng, value)
    form = pick(rng, ("{w} {v}", "{w} set to {v}", "{w} of {v}", "{w}: {v}", "the {w} {v}"))
    return form.format(w=w, v=written), value


def request(rng, vocab, inv, held_templates):
    """(template, slot values, arguments) for a request that calls invented tool `inv`."""
    given = [p for p in inv.params if p.required or rng.random() < 0.5]
    phrases, args = [], {}
    for p in given:
        phrase, value = _value_phrase(rng, vocab, p)
        phrases.append(phrase)
        args[p.key] = value
    if rng.random() < 0.3:
        rng.shuffle(phrases)
    if len(phrases) > 1:
        plist = ", ".join(phrases[:-1]) + pick(rng, (" and ", ", ")) + phrases[-1]
    else:
        plist = "".join(phrases)
    det = pick(rng, ("the", "a", "my", "this", "our"))
    if det == "a":
        det = _article(inv.noun)
    vp = f"{inv.verb} {det} {inv.noun}"
    template = pick(rng, REQUEST_TEMPLATES[held_templates, bool(phrases)])
    # The verb phrase and parameter list are not copied values: value 0 keeps render() from
    # treating them as free text.
    values = {"vp": SlotValue(vp, value=0), "plist": SlotValue(plist, value=0)}
    ordered = {p.key: args[p.key] for p in inv.params if p.key in args}
    return template, values, ordered


def noun_request(rng, inv, template, values):
    """(template, values) of a request for `inv` by its noun alone: `template` (request()'s) swapped
    for a noun frame with or without parameters as it had them, the verb phrase for a noun phrase."""
    has_params = "{plist}" in template.text
    text = pick(rng, NOUN_TEMPLATES if has_params else NOUN_TEMPLATES_NO_PARAMS)
    det = pick(rng, ("the", "a", "my", "this", "", ""))
    np = plural(inv.noun) if not det else f"{_article(inv.noun) if det == 'a' else det} {inv.noun}"
    values = dict(values, vp=SlotValue(np, value=0))
    t = Template(text, "other", "invented", False)
    t.noun = inv.noun  # data.Generator.single_text records the request by it
    return t, values


HELD_WORDS.update(Vocab(True).held_words)
