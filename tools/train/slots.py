"""Slot values and request templates (docs/training-data.md, "Conventions").

A request template is text with slots: `set a timer for {dur} called {label}`. A slot is filled with a
SlotValue: the text that goes into the request, the string a copied argument takes (`copy`), and the
value a converted argument takes (`value`: a number, a bool, a duration in seconds, an enum word).
Placeholders may carry one modifier: `{msg:q}` always quotes free text, `{day:bare}` writes a date
without its preposition, `{power:en}` writes a switch as enable/disable instead of on/off.

Every gold value follows from the request by one of the rules in docs/training-data.md: strings are
copied exactly as written (without surrounding quotes or a leading "on"/"at"); number words become
digits; durations are converted to the unit the parameter names; on/off, enable/disable and similar
switch words become booleans; a word becomes the enum value that equals it ignoring case.
"""

import re

from wordlists import MONTHS, WEEKDAYS, split_values

# --- slot values ---------------------------------------------------------------------------------


class SlotValue:
    """One slot's filling. `free` marks free text (a message, a task): it may be quoted, and it is
    quoted whenever the words after it could be read as part of it."""

    __slots__ = ("text", "copy", "value", "free", "alt")

    def __init__(self, text, copy=None, value=None, free=False, alt=None):
        self.text = text
        self.copy = text if copy is None else copy
        self.value = self.copy if value is None else value
        self.free = free
        self.alt = alt  # modifier -> text, e.g. {"bare": "Friday", "en": "enable"}

    def __repr__(self):
        return f"SlotValue({self.text!r}, copy={self.copy!r}, value={self.value!r})"


# --- numbers -------------------------------------------------------------------------------------

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
         "fifteen sixteen seventeen eighteen nineteen").split()
_TENS = {2: "twenty", 3: "thirty", 4: "forty", 5: "fifty", 6: "sixty", 7: "seventy", 8: "eighty",
         9: "ninety"}


def number_words(n):
    """English words for 0..99 ("forty-five"): the only number words requests use."""
    if not 0 <= n <= 99:
        raise ValueError(f"number_words: {n} is outside 0..99")
    if n < 20:
        return _ONES[n]
    tens, ones = divmod(n, 10)
    return _TENS[tens] + ("-" + _ONES[ones] if ones else "")


def say_int(rng, n, words_p=0.2):
    """An integer as a request writes it: digits, or words (0..99) with probability words_p."""
    if n <= 99 and rng.random() < words_p:
        return number_words(n)
    return str(n)


def decimal_text(value, places):
    """`value` with `places` decimals, as written in a request (12.50)."""
    return f"{value:.{places}f}"


def json_number(text):
    """The JSON value of a number written in a request: an int when it has no fraction, else the
    float (12.50 -> 12.5, 3.0 -> 3). Gold numbers are always written this way."""
    f = float(text)
    return int(f) if f == int(f) and "e" not in text.lower() else f


def pick(rng, seq):
    """A uniformly random element of `seq` (random.choice is several times slower)."""
    return seq[int(rng.random() * len(seq))]


def weighted(rng, items, weights):
    """One of `items`, with probability proportional to `weights` (random.choices is slower)."""
    x = rng.random() * sum(weights)
    for item, w in zip(items, weights):
        x -= w
        if x < 0:
            return item
    return items[-1]


# --- slot kinds ------------------------------------------------------------------------------------
# A slot kind samples a SlotValue: sample(rng, held, allowed). `held` picks values from the split-A
# holdout; `allowed` is a constraint from the tool variant (the smallest duration unit it can take,
# or the set of enum values, lowercase), or None.


class Choice:
    """A value from a list, copied verbatim. Lists are split into train and held-out values."""

    def __init__(self, items, free=False, holdout=True):
        items = list(dict.fromkeys(items))
        self.holdout = holdout
        if holdout:
            self.train, self.held = split_values(items)
        else:
            self.train = self.held = items
        self.free = free

    def pool(self, held):
        return self.held if held else self.train

    def sample(self, rng, held, allowed=None):
        return SlotValue(pick(rng, self.pool(held)), free=self.free)


class Word:
    """A word that selects an enum value (or is copied): text as written, value lowercase."""

    def __init__(self, items, forms=None):
        self.items = list(dict.fromkeys(items))
        self.forms = forms or {}  # word -> alternative spellings in requests (same lowercase)

    def sample(self, rng, held, allowed=None):
        items = self.items if allowed is None else [w for w in self.items if w.lower() in allowed]
        if not items:
            raise Unfillable("no word fits the enum")
        w = pick(rng, items)
        text = pick(rng, self.forms.get(w, [w]))
        return SlotValue(text, copy=text, value=w.lower())


class Flag:
    """A switch: text from `forms` (modifier -> (true words, false words)), value a bool."""

    def __init__(self, forms, only=None):
        self.forms = forms
        self.only = only  # True or False: the slot only ever takes that value

    def sample(self, rng, held, allowed=None):
        """`allowed` (a bool) is the only value the tool takes (turn_on_lights: True)."""
        if allowed is not None and self.only is not None and allowed != self.only:
            raise Unfillable(f"the switch only takes {self.only}")
        if allowed is not None:
            value = allowed
        else:
            value = self.only if self.only is not None else rng.random() < 0.5
        alt = {mod: pick(rng, words[0] if value else words[1]) for mod, words in self.forms.items()}
        return SlotValue(alt[""], copy=alt[""], value=value, alt=alt)


class Integer:
    """An integer in [lo, hi]; `fmt` wraps the written number ("{} people")."""

    def __init__(self, lo, hi, words_p=0.2, fmt="{}", step=1):
        self.lo, self.hi, self.words_p, self.fmt, self.step = lo, hi, words_p, fmt, step

    def sample(self, rng, held, allowed=None):
        n = rng.randrange(self.lo, self.hi + 1, self.step)
        # "eighty-five%" is not how anyone writes: a percent sign always follows digits.
        words_p = 0 if "%" in self.fmt else self.words_p
        return SlotValue(self.fmt.format(say_int(rng, n, words_p)), value=n)


class Amount:
    """A number as written: an integer, or with one or two decimals (12.50 -> 12.5)."""

    def __init__(self, lo, hi, decimals_p=0.35):
        self.lo, self.hi, self.decimals_p = lo, hi, decimals_p

    FRACTIONS = ("5", "25", "75", "50", "99", "95", "2", "8", "40", "10")

    def sample(self, rng, held, allowed=None):
        whole = rng.randint(self.lo, self.hi)
        if whole > 100 and rng.random() < 0.6:
            whole -= whole % pick(rng, (5, 10, 50))
        text = str(max(whole, self.lo))
        if rng.random() < self.decimals_p:
            text = f"{min(whole, 200)}.{pick(rng, self.FRACTIONS)}"
        return SlotValue(text, value=json_number(text))


UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600}


class Duration:
    """A length of time: "5 minutes", "an hour", "ninety seconds". value = total seconds.
    `allowed` is the smallest unit (in seconds) the tool can take: the request never uses a smaller
    one, so converting to the parameter's unit always gives a whole number. `ranges` overrides the
    range of each unit (a workout is not 12 hours long)."""

    RANGES = {"second": (5, 95), "minute": (1, 90), "hour": (1, 12)}

    def __init__(self, ranges=None):
        self.ranges = dict(self.RANGES, **(ranges or {}))

    def sample(self, rng, held, allowed=None):
        smallest = allowed or 1
        units = [u for u, s in UNIT_SECONDS.items() if s >= smallest]
        unit = pick(rng, units)
        lo, hi = self.ranges[unit]
        n = rng.randint(lo, hi)
        if unit == "second" and n > 20:
            n -= n % 5
        if n == 1 and rng.random() < 0.5:
            number = "an" if unit == "hour" else "a"
        else:
            number = say_int(rng, n, 0.2)
        text = f"{number} {unit}" + ("" if n == 1 else "s")
        return SlotValue(text, value=n * UNIT_SECONDS[unit])


class TimeOfDay:
    """A clock time in one of the usual spellings, copied verbatim: 7:30, 7:30 am, 6pm, 19:45."""

    def sample(self, rng, held, allowed=None):
        style = rng.random()
        minute = pick(rng, (0, 0, 0, 15, 30, 30, 45, 5, 10, 20, 40, 50))
        if style < 0.3:
            h = rng.randint(0, 23)
            text = f"{h:02d}:{minute:02d}" if rng.random() < 0.5 else f"{h}:{minute:02d}"
        elif style < 0.95:
            h = rng.randint(1, 12)
            suffix = pick(rng, ("am", "pm", " am", " pm", " a.m.", " p.m.", "AM", " PM", ""))
            text = (f"{h}:{minute:02d}" if minute or rng.random() < 0.3 else str(h)) + suffix
            if text.isdigit():
                text += pick(rng, ("pm", "am", " o'clock"))
        else:
            text = pick(rng, ("noon", "midnight"))
        return SlotValue(text)


def _day_phrase(rng):
    """(text in the request, copied value): a date with its preposition when it takes one."""
    r = rng.random()
    if r < 0.22:
        d = pick(rng, ("today", "tomorrow", "tonight", "this evening", "this weekend"))
        return d, d
    if r < 0.5:
        d = pick(rng, WEEKDAYS)
        return "on " + d, d
    if r < 0.65:
        d = "next " + pick(rng, WEEKDAYS + ["week"])
        return d, d
    if r < 0.85:
        m, day = pick(rng, MONTHS), rng.randint(1, 28)
        d = f"{m} {day}" if rng.random() < 0.6 else f"{day} {m}"
        return "on " + d, d
    d = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return "on " + d, d


class Day:
    """A date, copied without its leading "on": "on Friday" -> "Friday", "tomorrow" -> "tomorrow".
    `{day:bare}` writes it without the preposition."""

    def sample(self, rng, held, allowed=None):
        text, copy = _day_phrase(rng)
        return SlotValue(text, copy=copy, alt={"bare": copy})


class When:
    """A date and/or time, copied without a leading "on" or "at": "tomorrow at 9:30",
    "Friday at 5pm", "7:45"."""

    def sample(self, rng, held, allowed=None):
        time = TimeOfDay().sample(rng, held).text
        r = rng.random()
        if r < 0.35:
            return SlotValue("at " + time, copy=time)
        day_text, day_copy = _day_phrase(rng)
        if r < 0.55:
            return SlotValue(day_text, copy=day_copy)
        return SlotValue(f"{day_text} at {time}", copy=f"{day_copy} at {time}")


class Person:
    """A contact: a first name, sometimes with a surname, or Mom/Dad; copied verbatim."""

    def __init__(self, first, surnames, family):
        self.first = Choice(first)
        self.surnames = Choice(surnames)
        self.family = family

    def sample(self, rng, held, allowed=None):
        r = rng.random()
        if r < 0.06 and not held:
            return SlotValue(pick(rng, self.family))
        name = self.first.sample(rng, held).text
        if r < 0.25:
            name += " " + self.surnames.sample(rng, held).text
        return SlotValue(name)


class Unfillable(Exception):
    """A slot cannot be filled under the variant's constraints (the caller picks again)."""


# --- templates ---------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{(\w+)(?::(\w+))?\}")
_WORD = re.compile(r"[\w']+")
_QUOTE_TRIGGERS = set('?!.,;:"')


class Template:
    """A request template. `kind` is "imp" (an imperative clause: may take a polite prefix and may
    be joined to another clause) or "other" (a question or statement: used as it is)."""

    def __init__(self, text, kind, family, held):
        self.text = text
        self.kind = kind
        self.family = family
        self.held = held
        self.parts = []  # literal strings and (slot, modifier) pairs, in order
        pos = 0
        for m in _PLACEHOLDER.finditer(text):
            if m.start() > pos:
                self.parts.append(text[pos:m.start()])
            self.parts.append((m.group(1), m.group(2) or ""))
            pos = m.end()
        if pos < len(text):
            self.parts.append(text[pos:])
        # The slots in the order they first appear: values are drawn in this order, so the random
        # stream never depends on Python's string hashing (a set's iteration order does).
        self.slot_order = tuple(dict.fromkeys(p[0] for p in self.parts if isinstance(p, tuple)))
        self.slots = frozenset(self.slot_order)
        self.literals = [p for p in self.parts if isinstance(p, str)]
        last = self.parts[-1]
        # Ends with a slot: no polite suffix or full stop may follow (it could be read as part of it).
        self.ends_with_slot = isinstance(last, tuple)
        self.starts_with_slot = isinstance(self.parts[0], tuple)

    def key_fragment(self):
        """The template's longest literal piece, lowercased: held-out templates are recognised
        in requests by it (data.py checks that no training request contains one)."""
        return max((p.strip().lower() for p in self.literals), key=len, default="")

    def __repr__(self):
        return f"Template({self.family}: {self.text!r})"


def quote(rng, text):
    """Free text in quotes: straight double quotes mostly, sometimes single or curly ones."""
    r = rng.random()
    if r < 0.12 and "'" not in text:
        return f"'{text}'"
    if r < 0.2:
        return f"\u201c{text}\u201d"
    return f'"{text}"'


def render(template, values, rng, prefix="", suffix="", quote_p=0.3, force_quote=False):
    """The request text for `template` filled with `values` (slot -> SlotValue), between `prefix`
    and `suffix`, or None when a value that cannot be quoted would make the request ambiguous (the
    caller samples again).

    Free text is quoted with probability quote_p, always with the `q` modifier or force_quote, and
    whenever it is not delimited: when it contains quote-worthy punctuation or the word that follows
    it in the request (which may be in the suffix)."""
    pieces = []  # [text, slot value or None, quoted?]
    for part in [prefix] + template.parts + [suffix]:
        if part == "":
            continue
        if isinstance(part, str):
            pieces.append([part, None, False])
            continue
        name, mod = part
        sv = values[name]
        text = sv.alt.get(mod, sv.text) if (sv.alt and mod) else sv.text
        quoted = sv.free and (mod == "q" or force_quote or rng.random() < quote_p
                              or any(c in _QUOTE_TRIGGERS for c in sv.copy))
        pieces.append([text, sv, quoted])
    for i, (text, sv, quoted) in enumerate(pieces):
        if sv is None or quoted or not isinstance(sv.value, str) or sv.copy != text:
            continue
        rest = "".join(p[0] for p in pieces[i + 1:])
        follow = _WORD.match(rest.lstrip(" "))
        if rest[:1] in _QUOTE_TRIGGERS and rest[:1] in text:
            clash = True
        elif follow:
            clash = follow.group(0).lower() in {w.lower() for w in _WORD.findall(text)}
        else:
            clash = False
        if clash:
            if not sv.free:
                return None
            pieces[i][2] = True
    return "".join(quote(rng, text) if quoted else text for text, sv, quoted in pieces)
