"""Tool families: the intents the model learns, each with many tool variants and request templates.

A Family is one intent (set a timer, send a text ...). Its Variants are different tools for that
intent: names, descriptions, parameter names, types and units differ (`set_timer(minutes:int)`,
`start_countdown(duration_seconds:int, label:str)`, `add_timer(duration:str)` ...). Each parameter
is bound to a slot of the request templates and says how its value is derived from the slot
(docs/training-data.md, "Conventions"):

    copy       the text as written (strings)
    int, num   the number as written; number words become digits
    bool       a switch word: on/enable/lock... -> true, off/disable/unlock... -> false
    enum       the enum value equal to the request's word, ignoring case
    flag_enum  a switch as an enum: the first value for true, the second for false
    dur_s/m/h  a duration converted to seconds, minutes or hours (always a whole number)

A variant fits a template when it has a parameter for every slot of the template and every required
parameter's slot is in the template. `fixed` marks variants that take one value of a switch only
(turn_on_lights fits "turn on ...", never "turn off ...").

Families split "B" are held out whole: their tools and their words (B_WORDS) never appear in a
training prompt. The other families have held-out templates (held_imp, held_other) used only in split A.
"""

import re

import wordlists as W
import slots as S
from slots import (WORDS_P, Amount, Day, Duration, Flag, Integer, Person, SlotValue, Template, TimeOfDay,
                   Unfillable, Values, When, Word, pick, say_int)

# --- parameters and variants ------------------------------------------------------------------------

DEFAULT_CONV = {"string": "copy", "integer": "int", "number": "num", "boolean": "bool"}
DUR_UNIT = {"dur_s": 1, "dur_m": 60, "dur_h": 3600}


class Param:
    """One parameter of a tool variant, bound to a slot (or to one of several slots)."""

    def __init__(self, name, type, slot, req=False, conv=None, enum=None, desc=None,
                 need_desc=False, minimum=None, maximum=None):
        self.name = name
        self.type = type
        self.slots = (slot,) if isinstance(slot, str) else tuple(slot)
        self.req = req
        self.enum = list(enum) if enum else None
        self.conv = conv or ("enum" if self.enum else DEFAULT_CONV[type])
        self.desc = desc
        self.need_desc = need_desc  # the description carries meaning (a unit): always shown
        self.minimum = minimum
        self.maximum = maximum
        if need_desc and not desc:
            raise ValueError(f"parameter {name!r}: need_desc without a description")

    def schema(self, with_desc):
        s = {"type": self.type}
        if with_desc:
            s["description"] = self.desc
        if self.enum:
            s["enum"] = list(self.enum)
        if self.minimum is not None:
            s["minimum"] = self.minimum
        if self.maximum is not None:
            s["maximum"] = self.maximum
        return s

    def constraint(self):
        """What the slot sampler must respect: the smallest duration unit, or the enum values."""
        if self.conv in DUR_UNIT:
            return DUR_UNIT[self.conv]
        if self.conv == "enum":
            return {e.lower() for e in self.enum}
        return None

    def convert(self, sv):
        """The argument value for slot value `sv`, by this parameter's rule."""
        c = self.conv
        if c == "copy":
            return sv.copy
        if c in ("int", "num"):
            if isinstance(sv.value, bool) or not isinstance(sv.value, (int, float)):
                raise ValueError(f"parameter {self.name!r}: {sv!r} is not a number")
            if c == "int" and not isinstance(sv.value, int):
                raise Unfillable(f"parameter {self.name!r}: {sv.value} is not an integer")
            return sv.value
        if c == "bool":
            return bool(sv.value)
        if c == "enum":
            for e in self.enum:
                if e.lower() == str(sv.value).lower():
                    return e
            raise Unfillable(f"parameter {self.name!r}: {sv.value!r} is not in {self.enum}")
        if c == "flag_enum":
            return self.enum[0] if sv.value else self.enum[1]
        if c in DUR_UNIT:
            n, r = divmod(sv.value, DUR_UNIT[c])
            if r:
                raise Unfillable(f"parameter {self.name!r}: {sv.value} s is not whole in its unit")
            return n
        raise ValueError(f"parameter {self.name!r}: unknown conversion {c!r}")


P = Param


class Variant:
    """One tool for a family's intent."""

    def __init__(self, name, descs, *params, fixed=None):
        self.name = name
        self.descs = descs.split("|")
        self.params = params
        self.fixed = fixed or {}  # slot -> the only value this tool takes
        self.covered = {s for p in params for s in p.slots} | set(self.fixed)
        self.family = None
        self._tools = {}  # (description index, parameter descriptions shown) -> tool definition

    def fits(self, template):
        if not template.slots <= self.covered:
            return False
        for p in self.params:
            present = len(template.slots.intersection(p.slots))
            if present > 1 or (p.req and present == 0):
                return False
        return True

    def constraints(self, template):
        out = {slot: value for slot, value in self.fixed.items()}
        for p in self.params:
            c = p.constraint()
            if c is not None:
                for s in p.slots:
                    out[s] = c
        return out

    def tool(self, rng, desc_p=0.25):
        """The tool definition as offered in a prompt: one of its descriptions, and each parameter's
        description with probability desc_p (always when it carries meaning). The few distinct
        definitions are built once and shared (callers never modify them)."""
        d = int(rng.random() * len(self.descs))
        with_desc = tuple(bool(p.desc) and (p.need_desc or rng.random() < desc_p) for p in self.params)
        t = self._tools.get((d, with_desc))
        if t is None:
            props = {p.name: p.schema(w) for p, w in zip(self.params, with_desc)}
            t = {"name": self.name, "description": self.descs[d],
                 "parameters": {"type": "object", "properties": props,
                                "required": [p.name for p in self.params if p.req]}}
            self._tools[d, with_desc] = t
        return t

    def arguments(self, values):
        """The gold arguments for slot values `values`, in the order of the parameters."""
        for slot, value in self.fixed.items():
            if slot in values and values[slot].value != value:
                raise ValueError(f"tool {self.name}: slot {slot} is {values[slot].value}, "
                                 f"but this tool only takes {value}")
        args = {}
        for p in self.params:
            for s in p.slots:
                if s in values:
                    args[p.name] = p.convert(values[s])
        return args


V = Variant


class Fixed:
    """A slot filled by the family's `joint` sampler (values that depend on each other)."""

    def sample(self, rng, held, allowed=None):
        return None


class Family:
    """An intent: slots, tool variants, and request templates (train and held out)."""

    def __init__(self, name, slots, variants, imp, other=(), held_imp=(), held_other=(),
                 split="train", near=(), conflicts=(), words=(), joint=None):
        self.name = name
        self.slots = slots
        self.variants = variants
        self.split = split
        self.near = set(near)
        self.conflicts = set(conflicts)
        self.words = set(words)
        self.joint = joint
        for v in variants:
            v.family = self
        self.templates = ([Template(t, "imp", name, False) for t in imp]
                          + [Template(t, "other", name, False) for t in other])
        self.held_templates = ([Template(t, "imp", name, True) for t in held_imp]
                               + [Template(t, "other", name, True) for t in held_other])
        self.fitting = {}  # (variant name, held) -> templates it fits
        for v in variants:
            self.fitting[v.name, False] = [t for t in self.templates if v.fits(t)]
            self.fitting[v.name, True] = [t for t in self.held_templates if v.fits(t)]
        self._check()

    def _check(self):
        for t in self.templates + self.held_templates:
            unknown = t.slots - set(self.slots)
            if unknown:
                raise ValueError(f"family {self.name}: template {t.text!r} uses unknown slots {unknown}")
            if not any(v.fits(t) for v in self.variants):
                raise ValueError(f"family {self.name}: no variant fits template {t.text!r}")
        for v in self.variants:
            if not self.fitting[v.name, False]:
                raise ValueError(f"family {self.name}: variant {v.name} fits no template")
            for p in v.params:
                for s in p.slots:
                    if s not in self.slots:
                        raise ValueError(f"family {self.name}: {v.name}.{p.name} uses unknown slot {s}")

    def sample_values(self, rng, variant, template, held):
        """Slot values for `template`, within `variant`'s constraints; raises Unfillable."""
        cons = variant.constraints(template)
        values = {}
        for s in template.slot_order:
            sv = self.slots[s].sample(rng, held, cons.get(s))
            if sv is not None:
                values[s] = sv
        if self.joint is not None:
            self.joint(rng, held, values, template.slots)
        return values


# --- shared slot kinds ------------------------------------------------------------------------------

PERSON = Person(W.FIRST_NAMES, W.SURNAMES, W.FAMILY_CONTACTS)
PLACES = Values(W.PLACES, S.place_name)
CITIES = Values(W.CITIES, S.city_name)
ROOMS = Values(W.ROOMS, S.room_name)
MESSAGES = Values(W.MESSAGES, S.message_text, free=True)
DUR = Duration()
TIME = TimeOfDay()
DAY = Day()
WHEN = When()
POWER = Flag({"": (["on"], ["off"]), "en": (["enable"], ["disable"])})


def only_true(*words):
    return Flag({"": (list(words), [])}, only=True)


class Either:
    """One of several slot kinds, chosen at random (a recipient: a name or an email address)."""

    def __init__(self, *kinds):
        self.kinds = kinds

    def sample(self, rng, held, allowed=None):
        return pick(rng, self.kinds).sample(rng, held, allowed)


class Pick:
    """An integer from a list of values (temperatures in Celsius or Fahrenheit)."""

    def __init__(self, values, fmts=("{}",), words_p=WORDS_P):
        self.values, self.fmts, self.words_p = list(values), fmts, words_p

    def sample(self, rng, held, allowed=None):
        n = pick(rng, self.values)
        return SlotValue(pick(rng, self.fmts).format(say_int(rng, n, self.words_p)), value=n)


def _distinct(a, b):
    """A joint sampler: slots a and b must differ."""
    def joint(rng, held, values, slots):
        if a in values and b in values and values[a].copy == values[b].copy:
            raise Unfillable(f"{a} and {b} are the same")
    return joint


_UNIT_TRAIN, _UNIT_HELD = W.split_values(W.UNIT_PAIRS)


def _unit_pair(rng, held, values, slots):
    src, dst = pick(rng, _UNIT_HELD if held else _UNIT_TRAIN)
    values["ufrom"] = SlotValue(src)
    values["uto"] = SlotValue(dst)


# --- the families --------------------------------------------------------------------------------------

FAMILIES = []


def family(*args, **kwargs):
    f = Family(*args, **kwargs)
    FAMILIES.append(f)
    return f


family(
    "timer", near=("alarm", "reminder", "do_not_disturb"),
    slots={"dur": DUR, "label": Values(W.TIMER_LABELS, S.short_label, free=True)},
    variants=[
        V("set_timer", "Start a countdown timer.|Set a timer for some minutes.",
          P("minutes", "integer", "dur", req=True, conv="dur_m"),
          P("label", "string", "label", desc="Name shown on the timer")),
        V("start_countdown", "Begin a countdown.|Start a countdown in seconds.",
          P("duration_seconds", "integer", "dur", req=True, conv="dur_s"),
          P("label", "string", "label")),
        V("timer.create", "Create a new timer.",
          P("seconds", "integer", "dur", req=True, conv="dur_s", desc="Length in seconds"),
          P("name", "string", "label")),
        V("createTimer", "Creates a kitchen timer.|Create a timer with an optional title.",
          P("durationMinutes", "integer", "dur", req=True, conv="dur_m"),
          P("title", "string", "label")),
        V("add_timer", "Add a timer.|Add a named timer.",
          P("duration", "string", "dur", req=True, conv="copy", desc="Length as the user says it",
            need_desc=True),
          P("label", "string", "label")),
        V("timer_set", "Set a timer in whole hours.",
          P("hours", "integer", "dur", req=True, conv="dur_h")),
        V("countdown", "Count down a number of minutes.|Run a countdown.",
          P("mins", "integer", "dur", req=True, conv="dur_m", desc="Minutes to count down")),
        V("setTimer", "Set a timer for a duration.",
          P("duration", "integer", "dur", req=True, conv="dur_s", desc="Duration in seconds",
            need_desc=True),
          P("label", "string", "label")),
    ],
    imp=["set a timer for {dur}", "start a timer for {dur}", "set a {label} timer for {dur}",
         "start a countdown for {dur}", "set a timer for {dur} called {label}",
         "put a timer on for {dur}", "set a timer named {label} for {dur}", "count down {dur}",
         "make a timer for {dur} labelled {label}", "start a {label} timer for {dur}"],
    other=["I need a timer for {dur}", "can you set a timer for {dur}?", "timer for {dur}",
           "could you time {dur} for me?", "{label} timer, {dur}"],
    held_imp=["run a countdown lasting {dur}", "keep time for {dur}, it's for the {label}"],
    held_other=["would you mind timing {dur} on a timer?"],
)

family(
    "alarm", near=("timer", "reminder"),
    slots={"time": TIME, "label": Values(W.ALARM_LABELS, S.short_label, free=True), "day": DAY,
           "daily": only_true("every day", "daily")},
    variants=[
        V("set_alarm", "Set an alarm.|Set an alarm clock for a time.",
          P("time", "string", "time", req=True), P("label", "string", "label")),
        V("alarm.create", "Create an alarm.",
          P("time", "string", "time", req=True, desc="Time as the user says it"),
          P("day", "string", "day"), P("label", "string", "label")),
        V("createAlarm", "Creates a wake-up alarm.",
          P("alarmTime", "string", "time", req=True), P("note", "string", "label")),
        V("wake_me_up", "Wake-up alarm at a given time.",
          P("at", "string", "time", req=True), P("date", "string", "day")),
        V("add_alarm", "Add an alarm, optionally repeating daily.",
          P("time", "string", "time", req=True), P("repeat_daily", "boolean", "daily"),
          P("name", "string", "label")),
        V("alarms_add", "Add an alarm clock entry.",
          P("when", "string", "time", req=True),
          P("recurring", "boolean", "daily", desc="Repeat every day")),
    ],
    imp=["set an alarm for {time}", "wake me up at {time}", "set an alarm for {time} {day}",
         "set an alarm for {time} called {label}", "set a {label} alarm for {time}",
         "wake me at {time} {day}", "set an alarm at {time} {daily}",
         "create an alarm for {time} labelled {label}", "set an alarm for {time} {day} named {label}"],
    other=["I need to be up at {time}", "alarm at {time} please", "can you wake me up at {time} {day}?",
           "I want an alarm at {time} {daily}", "could you set an alarm for {time}?"],
    held_imp=["make sure I'm awake by {time} {day}", "buzz me awake at {time} {daily}"],
    held_other=["is it possible to get an alarm going for {time}, named {label}?"],
)

family(
    "reminder", near=("alarm", "calendar_event", "timer", "note"),
    slots={"task": Values(W.TASKS, S.task_text, free=True), "when": WHEN, "time": TIME, "day": DAY},
    variants=[
        V("create_reminder", "Create a reminder.|Remind the user about a task.",
          P("text", "string", "task", req=True), P("time", "string", "time"),
          P("date", "string", "day")),
        V("remind_me", "Remind me about something later.",
          P("task", "string", "task", req=True),
          P("when", "string", "when", desc="Date and time as said")),
        V("reminders.add", "Add a reminder to the list.",
          P("title", "string", "task", req=True), P("due", "string", "when")),
        V("addReminder", "Adds a reminder with optional time.",
          P("message", "string", "task", req=True), P("time", "string", "time"),
          P("day", "string", "day")),
        V("set_reminder", "Set a reminder for a time.",
          P("reminder", "string", "task", req=True), P("at", "string", "time", req=True)),
    ],
    imp=["remind me to {task} {when}", "remind me {when} to {task}", "set a reminder to {task}",
         "add a reminder: {task}", "remind me to {task} at {time} {day}",
         "create a reminder to {task} at {time}", "don't let me forget to {task} {when}",
         "set a reminder for {time} to {task}", "remind me {day} to {task}", "remind me to {task}"],
    other=["can you remind me to {task}?", "I need a reminder to {task} {when}",
           "could you remind me at {time} to {task}?"],
    held_imp=["jog my memory {when}: {task}", "flag this for {time} {day}: {task}"],
    held_other=["I'll forget to {task} unless you remind me at {time}"],
)

family(
    "calendar_event", near=("reminder",),
    slots={"title": Values(W.EVENT_TITLES, S.event_title, free=True), "day": DAY, "time": TIME,
           "person": PERSON, "place": PLACES,
           "length": Duration({"minute": (15, 240)}, {"hour": (1, 4)})},
    variants=[
        V("create_event", "Add an event to the calendar.",
          P("title", "string", "title", req=True), P("date", "string", "day", req=True),
          P("time", "string", "time")),
        V("calendar.add", "Create a calendar entry.",
          P("summary", "string", "title", req=True), P("day", "string", "day", req=True),
          P("start_time", "string", "time"), P("location", "string", "place")),
        V("schedule_meeting", "Schedule a meeting with someone.",
          P("subject", "string", "title", req=True), P("date", "string", "day", req=True),
          P("time", "string", "time", req=True), P("attendee", "string", "person")),
        V("addCalendarEvent", "Adds an event to your calendar.",
          P("name", "string", "title", req=True), P("date", "string", "day"),
          P("startTime", "string", "time"), P("with", "string", "person")),
        V("block_time", "Block time in the calendar.",
          P("title", "string", "title", req=True), P("date", "string", "day", req=True),
          P("duration_minutes", "integer", "length", conv="dur_m")),
    ],
    imp=["add {title} to my calendar {day}", "put {title} in my calendar {day} at {time}",
         "schedule {title} {day} at {time}", "create an event called {title} {day}",
         "add an event {day} at {time}: {title}", "schedule {title} with {person} {day} at {time}",
         "block {length} {day} for {title}", "add {title} at {place} to my calendar {day}",
         "create a calendar event {title} {day} at {time} at {place}"],
    other=["can you put {title} on my calendar {day}?", "I have {title} {day} at {time}, please add it",
           "could you schedule {title} with {person} {day}?"],
    held_imp=["pencil in {title} for {day:bare}", "log {title} in the diary for {day:bare} at {time}"],
    held_other=["my diary needs {title} {day}, starting {time}"],
)

_PLATFORMS = Word(["sms", "whatsapp", "signal", "telegram"],
                  forms={"sms": ["SMS", "sms"], "whatsapp": ["WhatsApp", "Whatsapp"],
                         "signal": ["Signal"], "telegram": ["Telegram"]})

family(
    "message", conflicts=("email",), near=("phone_call",),
    slots={"person": PERSON, "msg": MESSAGES, "platform": _PLATFORMS,
           "urgent": only_true("urgent")},
    variants=[
        V("send_message", "Send a text message.|Send a message to a contact.",
          P("recipient", "string", "person", req=True), P("text", "string", "msg", req=True)),
        V("send_sms", "Send an SMS.",
          P("to", "string", "person", req=True), P("body", "string", "msg", req=True)),
        V("messages.send", "Send a message on a chat app.",
          P("contact", "string", "person", req=True), P("message", "string", "msg", req=True),
          P("platform", "string", "platform", enum=["sms", "whatsapp", "signal", "telegram"])),
        V("textContact", "Text a contact.",
          P("name", "string", "person", req=True), P("content", "string", "msg", req=True)),
        V("message_contact", "Message someone, marked urgent if asked.",
          P("contact", "string", "person", req=True), P("message", "string", "msg", req=True),
          P("urgent", "boolean", "urgent")),
        V("send_chat", "Send a chat message.",
          P("user", "string", "person", req=True), P("msg", "string", "msg", req=True),
          P("app", "string", "platform", enum=["WHATSAPP", "SIGNAL", "TELEGRAM", "SMS"])),
    ],
    imp=["text {person} {msg:q}", "send {person} a message saying {msg}", "message {person}: {msg}",
         "tell {person}: {msg}", "text {person} saying {msg}", "send a text to {person}: {msg}",
         "send {msg:q} to {person}", "send {person} a {platform} message saying {msg}",
         "message {person} on {platform}: {msg}", "send an {urgent} message to {person}: {msg}",
         "text {person} that {msg}"],
    other=["can you text {person} {msg:q}?", "let {person} know: {msg}",
           "I want to message {person} saying {msg}"],
    held_imp=["shoot {person} a quick text: {msg}", "drop {person} a line on {platform} that says {msg}"],
    held_other=["could you ping {person} by text with {msg:q}?"],
)

family(
    "phone_call", near=("message",),
    slots={"person": PERSON, "number": Values(W.PHONE_NUMBERS, S.phone_number), "video": only_true("video"),
           "speaker": only_true("on speaker", "on speakerphone")},
    variants=[
        V("call_contact", "Place a phone call to a contact.", P("name", "string", "person", req=True)),
        V("phone.dial", "Dial a phone number.",
          P("number", "string", "number", req=True, desc="Digits as written")),
        V("make_call", "Start a voice or video call.",
          P("contact", "string", "person", req=True), P("video", "boolean", "video")),
        V("startCall", "Starts a phone call.",
          P("callee", "string", "person", req=True), P("speakerphone", "boolean", "speaker")),
        V("dial_number", "Call a phone number.", P("phone_number", "string", "number", req=True)),
        V("call", "Call a person or a number.", P("who", "string", ("person", "number"), req=True)),
    ],
    imp=["call {person}", "ring {person}", "phone {person}", "give {person} a call", "call {number}",
         "dial {number}", "start a {video} call with {person}", "{video} call {person}",
         "call {person} {speaker}"],
    other=["can you call {person} for me?", "I need to call {number}",
           "could you get {person} on the phone?"],
    held_imp=["connect me with {person} by phone", "put a call through to {number}"],
    held_other=["can I get a {video} chat going with {person}?"],
)

family(
    "email", conflicts=("message",),
    slots={"recipient": Either(PERSON, Values(W.EMAIL_ADDRESSES, S.email_address)),
           "subject": Values(W.EMAIL_SUBJECTS, S.subject_text, free=True), "body": MESSAGES},
    variants=[
        V("send_email", "Send an email.",
          P("to", "string", "recipient", req=True), P("subject", "string", "subject"),
          P("body", "string", "body")),
        V("email.compose", "Compose and send an email.",
          P("recipient", "string", "recipient", req=True), P("subject", "string", "subject", req=True),
          P("message", "string", "body")),
        V("sendMail", "Sends an email message.",
          P("address", "string", "recipient", req=True, desc="Name or email address"),
          P("title", "string", "subject"), P("text", "string", "body")),
        V("email_contact", "Email a contact.",
          P("contact", "string", "recipient", req=True), P("content", "string", "body", req=True)),
    ],
    imp=["email {recipient} about {subject}", "send an email to {recipient} with the subject {subject}",
         "email {recipient}: {body}", "send {recipient} an email saying {body}",
         "write an email to {recipient} titled {subject:q} saying {body}",
         "mail {recipient} with subject {subject:q} and body {body:q}",
         "send an email to {recipient} about {subject} saying {body:q}"],
    other=["can you email {recipient} about {subject}?", "I need to email {recipient}: {body}"],
    held_imp=["fire off a mail to {recipient} re: {subject}",
              "compose an email for {recipient}, subject {subject:q}, text {body:q}"],
    held_other=["would you drop {recipient} an email that says {body}?"],
)

_MODES = Word(["driving", "walking", "cycling", "transit"])

family(
    "navigation", near=("ride",),
    slots={"dest": PLACES, "origin": PLACES, "mode": _MODES,
           "tolls": only_true("avoiding tolls", "with no tolls", "without toll roads")},
    joint=_distinct("origin", "dest"),
    variants=[
        V("get_directions", "Get directions to a place.",
          P("destination", "string", "dest", req=True),
          P("mode", "string", "mode", enum=["driving", "walking", "cycling", "transit"])),
        V("navigate_to", "Start turn-by-turn navigation.", P("place", "string", "dest", req=True)),
        V("maps.route", "Plan a route between places.",
          P("to", "string", "dest", req=True), P("from", "string", "origin"),
          P("travel_mode", "string", "mode", enum=["DRIVING", "WALKING", "CYCLING", "TRANSIT"])),
        V("startNavigation", "Starts navigation to an address.",
          P("address", "string", "dest", req=True), P("avoidTolls", "boolean", "tolls")),
        V("directions", "Directions from one place to another.",
          P("origin", "string", "origin"), P("destination", "string", "dest", req=True)),
    ],
    imp=["navigate to {dest}", "get directions to {dest}", "take me to {dest}",
         "give me {mode} directions to {dest}", "show the {mode} route to {dest}",
         "navigate to {dest} {tolls}", "get {mode} directions from {origin} to {dest}",
         "start navigation to {dest}"],
    other=["how do I get to {dest}?", "route from {origin} to {dest}", "directions to {dest} please", "what's the {mode} route from {origin} to {dest}?",
           "how do I get from {origin} to {dest}?"],
    held_imp=["guide me over to {dest}", "plot a course to {dest} {tolls}"],
    held_other=["which way to {dest}?"],
)

family(
    "ride", near=("navigation",),
    slots={"dest": PLACES, "origin": PLACES,
           "tier": Word(["standard", "comfort", "XL", "green"]),
           "pax": Integer(2, 12), "time": TIME},
    joint=_distinct("origin", "dest"),
    variants=[
        V("book_ride", "Book a ride to a destination.",
          P("destination", "string", "dest", req=True), P("pickup", "string", "origin")),
        V("request_taxi", "Request a taxi.",
          P("to", "string", "dest", req=True), P("from", "string", "origin"),
          P("passengers", "integer", "pax")),
        V("rides.order", "Order a car of a given tier.",
          P("dropoff", "string", "dest", req=True),
          P("tier", "string", "tier", enum=["standard", "comfort", "xl", "green"])),
        V("callCab", "Calls a cab, now or later.",
          P("destination", "string", "dest", req=True), P("pickupTime", "string", "time")),
        V("hail_car", "Hail a car to an address.", P("address", "string", "dest", req=True)),
    ],
    imp=["book a ride to {dest}", "get me a taxi to {dest}", "order a cab to {dest} from {origin}",
         "book a ride to {dest} in {tier}", "call me a cab to {dest} at {time}",
         "book a taxi from {origin} to {dest}", "get a taxi for {pax} people to {dest}",
         "order a ride to {dest}", "book a cab to {dest} for {time}"],
    other=["I need a ride to {dest}", "can you get me a car to {dest}, {tier} please?",
           "could you order a taxi for {pax} to {dest}?"],
    held_imp=["whistle up a taxi headed for {dest}", "arrange a car in {tier} heading to {dest}"],
    held_other=["is there a cab that can take {pax} of us to {dest}?"],
)

_TEMP_UNITS = Word(["celsius", "fahrenheit"], forms={"celsius": ["Celsius", "celsius"],
                                                    "fahrenheit": ["Fahrenheit", "fahrenheit"]})

family(
    "weather",
    slots={"city": CITIES, "day": DAY, "unit": _TEMP_UNITS},
    variants=[
        V("get_weather", "Get the current weather.|Current weather for a location.",
          P("location", "string", "city", req=True),
          P("unit", "string", "unit", enum=["celsius", "fahrenheit"])),
        V("weather.forecast", "Weather forecast for a city.",
          P("city", "string", "city", req=True), P("date", "string", "day")),
        V("getForecast", "Gets the forecast for a place and day.",
          P("place", "string", "city", req=True), P("day", "string", "day"),
          P("units", "string", "unit", enum=["Celsius", "Fahrenheit"])),
        V("current_weather", "Weather right now in a city.", P("city", "string", "city", req=True)),
    ],
    imp=["show me the weather for {city} in {unit}", "check the weather in {city}",
         "get the forecast for {city} {day}", "give me the weather in {city} {day}"],
    other=["what's the weather in {city}?", "weather in {city} {day}", "will it rain in {city} {day}?",
           "forecast for {city}", "how hot is it in {city} in {unit}?", "is it cold in {city} right now?",
           "what's the forecast for {city} {day}?", "what's the temperature in {city}?"],
    held_imp=["tell me if I need a coat in {city} {day}"],
    held_other=["should I pack an umbrella for {city} {day}?", "what's it like outside in {city}, in {unit}?",
                "how's the sky looking over {city}?"],
)

_PCT_FORMS = [Integer(1, 100, fmt="{}%"), Integer(1, 100, fmt="{} percent")]

family(
    "lights",
    slots={"room": ROOMS, "power": POWER, "pct": Either(*_PCT_FORMS),
           "color": Values(W.COLOURS, S.colour_name)},
    variants=[
        V("set_light", "Turn a room's lights on or off.",
          P("room", "string", "room", req=True), P("on", "boolean", "power", req=True)),
        V("lights.toggle", "Switch lights on or off.",
          P("room", "string", "room", req=True),
          P("state", "string", "power", req=True, enum=["on", "off"], conv="flag_enum")),
        V("turn_on_lights", "Turn on the lights in a room.", P("room", "string", "room", req=True),
          fixed={"power": True}),
        V("turn_off_lights", "Turn off the lights in a room.", P("room", "string", "room", req=True),
          fixed={"power": False}),
        V("set_brightness", "Set light brightness in a room.",
          P("room", "string", "room", req=True),
          P("level", "integer", "pct", req=True, minimum=0, maximum=100, desc="Brightness in percent")),
        V("setLights", "Control lights: power, brightness, color.",
          P("area", "string", "room", req=True), P("power", "boolean", "power"),
          P("brightness", "integer", "pct"), P("color", "string", "color")),
        V("smart_home.light", "Control one room's lamps.",
          P("room", "string", "room", req=True),
          P("power", "string", "power", enum=["ON", "OFF"], conv="flag_enum"),
          P("dim_percent", "integer", "pct")),
    ],
    imp=["turn {power} the {room} lights", "turn the lights {power} in the {room}",
         "switch {power} the {room} light", "dim the {room} lights to {pct}",
         "set the {room} lights to {pct}", "turn {power} the lights in the {room}",
         "make the {room} lights {color}", "set the {room} lights to {color} at {pct}",
         "{power:en} the {room} lights", "switch the {room} lights {power}"],
    other=["can you turn {power} the {room} lights?", "could you set the {room} lights to {pct}?",
           "I want the {room} lights {power}"],
    held_imp=["flip the {room} lamps {power}", "bring the {room} lights to {pct} brightness"],
    held_other=["any chance you could switch {power} the {room} lamps?"],
)

_TEMPS = Pick(list(range(10, 33)) + list(range(50, 91)))

family(
    "thermostat",
    slots={"temp": _TEMPS, "mode": Word(["heat", "cool", "auto", "eco"]), "room": ROOMS},
    variants=[
        V("set_thermostat", "Set the thermostat temperature.", P("temperature", "integer", "temp", req=True)),
        V("climate.set_temperature", "Set target temperature and mode.",
          P("target", "number", "temp", req=True),
          P("mode", "string", "mode", enum=["heat", "cool", "auto", "eco"])),
        V("setTemperature", "Sets the temperature in a zone.",
          P("degrees", "integer", "temp", req=True), P("zone", "string", "room")),
        V("set_hvac_mode", "Change the heating or cooling mode.",
          P("mode", "string", "mode", req=True, enum=["HEAT", "COOL", "AUTO", "ECO", "OFF"])),
        V("thermostat_set", "Adjust the heating.",
          P("target_temp", "integer", "temp", req=True, desc="Degrees"), P("room", "string", "room")),
    ],
    imp=["set the thermostat to {temp} degrees", "set the temperature to {temp}",
         "make it {temp} degrees in the {room}", "set the heating to {temp} degrees",
         "switch the thermostat to {mode} mode", "set it to {temp} degrees in {mode} mode",
         "turn the {room} up to {temp} degrees", "put the thermostat on {mode}",
         "change the {room} temperature to {temp}"],
    other=["can you set the thermostat to {temp}?", "I'd like it to be {temp} degrees",
           "could you switch to {mode} mode?"],
    held_imp=["bump the thermostat to {temp} on {mode}", "warm the {room} up to {temp} degrees",
              "nudge the heat up to {temp} degrees", "flip the climate system over to {mode}"],
    held_other=["is it possible to hold the {room} at {temp} degrees?"],
)

family(
    "door_lock",
    slots={"door": Values(W.DOORS, S.door_name), "lock": Flag({"": (["lock"], ["unlock"])})},
    variants=[
        V("set_lock", "Lock or unlock a door.",
          P("door", "string", "door", req=True), P("locked", "boolean", "lock", req=True)),
        V("lock_door", "Lock a door.", P("door", "string", "door", req=True), fixed={"lock": True}),
        V("unlock_door", "Unlock a door.", P("door", "string", "door", req=True), fixed={"lock": False}),
        V("locks.set_state", "Change a smart lock's state.",
          P("lock", "string", "door", req=True),
          P("action", "string", "lock", req=True, enum=["lock", "unlock"], conv="flag_enum")),
        V("secureDoor", "Lock or unlock a smart door.",
          P("doorName", "string", "door", req=True), P("lock", "boolean", "lock", req=True)),
    ],
    imp=["{lock} the {door}", "please {lock} the {door}", "{lock} the {door} now", "{lock} my {door}"],
    other=["can you {lock} the {door}?", "could you {lock} the {door} for me?",
           "I need you to {lock} the {door}"],
    held_imp=["go ahead and {lock} the {door} for me"],
    held_other=["would you kindly {lock} the {door}?"],
)

family(
    "music_play", near=("volume", "podcasts"),
    slots={"song": Values(W.SONGS, S.song_title, free=True), "artist": Values(W.ARTISTS, S.artist_name),
           "playlist": Values(W.PLAYLISTS, S.playlist_name), "genre": Values(W.GENRES, S.genre_name),
           "shuffle": Flag({"": (["shuffle"], []), "on": (["on shuffle", "shuffled"], [])}, only=True)},
    variants=[
        V("play_music", "Play a song, artist or playlist.",
          P("query", "string", ("song", "artist", "playlist", "genre"), req=True)),
        V("play_song", "Play a specific song.",
          P("title", "string", "song", req=True), P("artist", "string", "artist")),
        V("music.play", "Play a track.",
          P("track", "string", "song", req=True), P("artist", "string", "artist")),
        V("playArtist", "Plays music by an artist.",
          P("artist", "string", "artist", req=True), P("shuffle", "boolean", "shuffle")),
        V("play_playlist", "Start one of your playlists.",
          P("name", "string", "playlist", req=True), P("shuffle", "boolean", "shuffle")),
        V("play_genre", "Play music of a genre.", P("genre", "string", "genre", req=True)),
    ],
    imp=["play {song}", "play {song} by {artist}", "put on {song}", "play some music by {artist}",
         "play something by {artist}", "play my {playlist} playlist", "{shuffle} my {playlist} playlist",
         "play {genre} music", "play the {playlist} playlist {shuffle:on}", "play {artist} {shuffle:on}",
         "put on some {genre}"],
    other=["I want to hear {song}", "can you play {song} by {artist}?", "could you play some {genre}?"],
    held_imp=["queue up {song} from {artist}", "blast some {genre} for me", "queue up anything by {artist}"],
    held_other=["mind spinning the {playlist} playlist?"],
)

family(
    "volume", near=("music_play",),
    slots={"level": Either(Integer(0, 100, fmt="{}"), Integer(0, 100, fmt="{}%"),
                           Integer(0, 100, fmt="{} percent")),
           "device": Values(["TV", "kitchen speaker", "soundbar", "bedroom speaker", "radio",
                             "headphones", "car stereo", "office speaker"], S.device_name),
           "mute": Flag({"": (["mute"], ["unmute"])})},
    variants=[
        V("set_volume", "Set the playback volume.",
          P("level", "integer", "level", req=True, minimum=0, maximum=100)),
        V("audio.volume", "Change the volume of a device.",
          P("percent", "integer", "level", req=True), P("device", "string", "device")),
        V("setVolume", "Sets volume from 0 to 100.",
          P("value", "integer", "level", req=True, desc="0 to 100")),
        V("mute_audio", "Mute or unmute the sound.",
          P("muted", "boolean", "mute", req=True), P("device", "string", "device")),
        V("speaker_volume", "Adjust a speaker's volume.",
          P("speaker", "string", "device", req=True), P("volume", "integer", "level", req=True)),
    ],
    imp=["set the volume to {level}", "turn the volume to {level}", "change the {device} volume to {level}",
         "{mute} the {device}", "please {mute} the sound", "set the {device} to volume {level}",
         "turn the {device} down to {level}", "{mute} the audio"],
    other=["can you set the volume to {level}?", "volume to {level} please", "could you {mute} the {device}?"],
    held_imp=["crank the volume up to {level}", "bring the {device} volume down to {level}"],
    held_other=["how about we {mute} the {device}?"],
)

family(
    "note", near=("shopping_list", "reminder"),
    slots={"note": Values(W.NOTES, S.note_text, free=True),
           "title": Values(["Garden", "Work", "Trip", "House", "Kids", "Car", "Books", "Ideas", "Health",
                            "Weekend", "Moving"], S.note_title, free=True),
           "folder": Word(["work", "personal", "ideas", "travel", "home"]),
           "pinned": only_true("pinned")},
    variants=[
        V("create_note", "Create a new note.", P("content", "string", "note", req=True)),
        V("notes.add", "Save text as a note.",
          P("text", "string", "note", req=True), P("title", "string", "title")),
        V("saveNote", "Saves a note, optionally pinned.",
          P("body", "string", "note", req=True), P("pinned", "boolean", "pinned")),
        V("add_note", "Add a note to a folder.",
          P("note", "string", "note", req=True),
          P("folder", "string", "folder", enum=["work", "personal", "ideas", "travel", "home"])),
    ],
    imp=["take a note: {note}", "make a note {note:q}", "save a note saying {note}", "write down {note}",
         "create a note titled {title:q} saying {note}", "add {note:q} to my notes", "jot down {note}",
         "save a {pinned} note: {note}", "add a note to my {folder} folder: {note}", "note down {note}"],
    other=["can you note that {note}?", "I want to save a note: {note}"],
    held_imp=["scribble this down for me: {note}", "keep a memo in {folder} that says {note}"],
    held_other=["could you remember this in a note, {note:q}?"],
)

family(
    "shopping_list", near=("note",),
    slots={"item": Values(W.SHOPPING_ITEMS, S.item_name), "qty": Integer(2, 200, log=True),
           "list": Values(["grocery", "hardware", "pharmacy", "party", "weekly", "camping"], S.list_name)},
    variants=[
        V("add_to_shopping_list", "Add an item to the shopping list.", P("item", "string", "item", req=True)),
        V("shopping.add", "Put something on the shopping list.",
          P("item", "string", "item", req=True), P("quantity", "integer", "qty")),
        V("addItem", "Adds an item to a named list.",
          P("name", "string", "item", req=True), P("qty", "integer", "qty"), P("list", "string", "list")),
        V("add_grocery", "Add groceries to buy.",
          P("product", "string", "item", req=True), P("count", "integer", "qty")),
    ],
    imp=["add {item} to my shopping list", "put {item} on the shopping list", "add {qty} {item} to the list",
         "add {item} to the {list} list", "put {qty} {item} on my {list} list",
         "add {qty} {item} to my shopping list"],
    other=["can you add {item} to my shopping list?", "shopping list: add {item}", "I need {qty} {item}, put them on the list",
           "we need {item}, add it to the list"],
    held_imp=["stick {item} on the grocery list", "pop {qty} {item} onto the {list} list"],
    held_other=["could {item} go on my shopping list?"],
)

INFO_FAMILIES = ("weather", "news", "translate", "unit_convert", "currency_convert", "flights",
                 "restaurant", "recipes", "stocks", "hotels", "podcasts", "package_tracking", "fitness")

family(
    "web_search", conflicts=INFO_FAMILIES + ("chitchat",),
    slots={"q": Values(W.SEARCH_QUERIES, S.search_text, free=True), "n": Integer(2, 100, log=True)},
    variants=[
        V("web_search", "Search the web.", P("query", "string", "q", req=True)),
        V("search.web", "Search the internet for pages.",
          P("q", "string", "q", req=True), P("limit", "integer", "n")),
        V("searchInternet", "Searches the internet.", P("terms", "string", "q", req=True)),
        V("lookup_online", "Look something up online.",
          P("text", "string", "q", req=True), P("max_results", "integer", "n")),
    ],
    imp=["search the web for {q}", "look up {q}", "google {q}", "search for {q}",
         "do a web search for {q}", "find me {n} results for {q}", "search online for {q}",
         "look up {q} online"],
    other=["can you look up {q}?", "I want to search for {q}"],
    held_imp=["scour the internet for {q}", "dig up {n} pages about {q}"],
    held_other=["what comes up online for {q}?"],
)

_LANG = Word(W.LANGUAGES, novel=S.language_name, novel_p=0.3)

family(
    "translate", conflicts=("web_search",),
    slots={"phrase": Values(W.PHRASES, S.phrase_text, free=True), "lang": _LANG, "src": _LANG},
    joint=_distinct("lang", "src"),
    variants=[
        V("translate", "Translate text into another language.",
          P("text", "string", "phrase", req=True), P("target_language", "string", "lang", req=True)),
        V("translate_text", "Translate text between languages.",
          P("text", "string", "phrase", req=True), P("to", "string", "lang", req=True),
          P("from", "string", "src")),
        V("i18n.translate", "Translate a phrase.",
          P("phrase", "string", "phrase", req=True),
          P("target", "string", "lang", req=True,
            enum=["spanish", "french", "german", "italian", "japanese", "portuguese", "dutch", "korean"])),
        V("translateTo", "Translates content to a language.",
          P("language", "string", "lang", req=True), P("content", "string", "phrase", req=True)),
    ],
    imp=["translate {phrase} into {lang}", "translate {phrase:q} from {src} to {lang}",
         "say {phrase:q} in {lang}", "translate {phrase:q} to {lang}", "translate this into {lang}: {phrase}"],
    other=["how do you say {phrase} in {lang}?", "what is {phrase:q} in {lang}?",
           "{lang} translation of {phrase:q} please", "how would I say {phrase:q} in {lang}?"],
    held_other=["could you render {phrase:q} in {lang} for me?",
                "I need the following in {lang}, originally {src}: {phrase}",
                "what would the {lang} be for {phrase:q}?"],
)

family(
    "unit_convert", near=("currency_convert",), conflicts=("web_search",),
    slots={"v": Amount(1, 100000), "ufrom": Fixed(), "uto": Fixed()},
    joint=_unit_pair,
    variants=[
        V("convert_units", "Convert a value between units.",
          P("value", "number", "v", req=True), P("from_unit", "string", "ufrom", req=True),
          P("to_unit", "string", "uto", req=True)),
        V("unit.convert", "Convert between units of measure.",
          P("amount", "number", "v", req=True), P("source", "string", "ufrom", req=True),
          P("target", "string", "uto", req=True)),
        V("convertMeasurement", "Converts a measurement to another unit.",
          P("quantity", "number", "v", req=True), P("from", "string", "ufrom", req=True),
          P("to", "string", "uto", req=True)),
    ],
    imp=["convert {v} {ufrom} to {uto}", "change {v} {ufrom} into {uto}",
         "convert {v} {ufrom} into {uto} please"],
    other=["how many {uto} is {v} {ufrom}?", "what is {v} {ufrom} in {uto}?", "{v} {ufrom} in {uto}?",
           "how much is {v} {ufrom} in {uto}?"],
    held_imp=["express {v} {ufrom} in terms of {uto}"],
    held_other=["I've got {v} {ufrom}, what's that in {uto}?"],
)

_CUR = Word(W.CURRENCIES, novel=S.currency_code, novel_p=0.25)
_CUR_ENUM = ["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "SEK", "INR", "CNY"]

family(
    "currency_convert", near=("unit_convert", "payment"), conflicts=("web_search",),
    slots={"amount": Amount(1, 1000000), "cfrom": _CUR, "cto": _CUR},
    joint=_distinct("cfrom", "cto"),
    variants=[
        V("convert_currency", "Convert money between currencies.",
          P("amount", "number", "amount", req=True), P("from_currency", "string", "cfrom", req=True),
          P("to_currency", "string", "cto", req=True)),
        V("fx.convert", "Currency exchange calculator.",
          P("amount", "number", "amount", req=True), P("base", "string", "cfrom", req=True),
          P("quote", "string", "cto", req=True)),
        V("getExchangeRate", "Gets the exchange rate between currencies.",
          P("base", "string", "cfrom", req=True), P("target", "string", "cto", req=True)),
        V("exchange", "Convert an amount of money.",
          P("value", "number", "amount", req=True), P("from", "string", "cfrom", req=True, enum=_CUR_ENUM),
          P("to", "string", "cto", req=True, enum=_CUR_ENUM)),
    ],
    imp=["convert {amount} {cfrom} to {cto}", "change {amount} {cfrom} into {cto}",
         "convert {amount} {cfrom} into {cto} for me"],
    other=["how much is {amount} {cfrom} in {cto}?", "what's {amount} {cfrom} in {cto}?",
           "what's the exchange rate from {cfrom} to {cto}?", "{cfrom} to {cto} rate?"],
    held_imp=["tell me what {amount} {cfrom} comes to in {cto}"],
    held_other=["{amount} {cfrom} is how many {cto}?", "how many {cto} do I get for {amount} {cfrom}?",
                "how does {cfrom} stand against {cto} today?"],
)

family(
    "payment", near=("currency_convert",),
    slots={"person": PERSON, "amount": Amount(1, 50000), "cur": _CUR,
           "pnote": Values(W.PAYMENT_NOTES, S.words_1_to_4, free=True)},
    variants=[
        V("send_money", "Send money to a contact.",
          P("recipient", "string", "person", req=True), P("amount", "number", "amount", req=True),
          P("currency", "string", "cur")),
        V("pay", "Pay someone a sum of money.",
          P("to", "string", "person", req=True), P("amount", "number", "amount", req=True),
          P("note", "string", "pnote")),
        V("payments.transfer", "Transfer money to a payee.",
          P("payee", "string", "person", req=True), P("amount", "number", "amount", req=True),
          P("currency", "string", "cur", enum=["USD", "EUR", "GBP", "CHF", "SEK", "JPY"]),
          P("memo", "string", "pnote")),
        V("sendPayment", "Sends a payment with a note.",
          P("name", "string", "person", req=True), P("value", "number", "amount", req=True),
          P("message", "string", "pnote")),
    ],
    imp=["send {amount} {cur} to {person}", "pay {person} {amount} {cur}",
         "transfer {amount} {cur} to {person} for {pnote}", "send {person} {amount} {cur}",
         "pay {person} {amount} for {pnote}", "send {person} {amount} with the note {pnote:q}",
         "pay {person} {amount} {cur} for {pnote}", "transfer {amount} to {person}"],
    other=["can you send {person} {amount} {cur}?", "I owe {person} {amount} for {pnote}, can you pay them?"],
    held_imp=["wire {amount} {cur} across to {person}", "settle up with {person}: {amount} {cur} for {pnote}",
              "square up with {person}, {amount} for {pnote}"],
    held_other=["could {person} get {amount} {cur} from me?"],
)

family(
    "flights", conflicts=("web_search",),
    slots={"origin": CITIES, "dest": CITIES, "day": DAY, "pax": Integer(2, 40, log=True),
           "cabin": Word(["economy", "premium", "business", "first"])},
    joint=_distinct("origin", "dest"),
    variants=[
        V("search_flights", "Search for flights.",
          P("origin", "string", "origin", req=True), P("destination", "string", "dest", req=True),
          P("date", "string", "day")),
        V("flights.find", "Find available flights.",
          P("from", "string", "origin", req=True), P("to", "string", "dest", req=True),
          P("depart_date", "string", "day"), P("passengers", "integer", "pax")),
        V("findFlights", "Finds flights by cabin class.",
          P("departureCity", "string", "origin", req=True), P("arrivalCity", "string", "dest", req=True),
          P("cabin", "string", "cabin", enum=["economy", "premium", "business", "first"])),
        V("flight_search", "Look up flights between two cities.",
          P("from_city", "string", "origin", req=True), P("to_city", "string", "dest", req=True),
          P("travelers", "integer", "pax"), P("date", "string", "day")),
    ],
    imp=["find flights from {origin} to {dest} {day}", "search for flights to {dest} from {origin}",
         "find flights from {origin} to {dest} for {pax} people",
         "look for {cabin} class flights from {origin} to {dest}", "search flights {origin} to {dest} {day}",
         "find me {cabin} class flights from {origin} to {dest}"],
    other=["are there flights from {origin} to {dest} {day}?", "I need a flight in {cabin} from {origin} to {dest}",
           "any flights from {origin} to {dest} for {pax} people?"],
    held_imp=["get me airborne from {origin} to {dest} {day}", "hunt down {cabin} seats from {origin} to {dest}"],
    held_other=["what planes go from {origin} to {dest} {day}?"],
)

family(
    "restaurant", conflicts=("web_search",),
    slots={"rest": Values(W.RESTAURANTS, S.restaurant_name), "party": Integer(2, 60, log=True), "time": TIME,
           "day": DAY},
    variants=[
        V("book_table", "Reserve a restaurant table.",
          P("restaurant", "string", "rest", req=True), P("party_size", "integer", "party", req=True),
          P("time", "string", "time")),
        V("reserve_restaurant", "Make a restaurant reservation.",
          P("name", "string", "rest", req=True), P("guests", "integer", "party", req=True),
          P("date", "string", "day"), P("time", "string", "time")),
        V("makeReservation", "Makes a dinner reservation.",
          P("restaurant", "string", "rest", req=True), P("partySize", "integer", "party"),
          P("time", "string", "time", req=True)),
        V("restaurants.book", "Book a table somewhere.",
          P("venue", "string", "rest", req=True), P("people", "integer", "party", req=True),
          P("day", "string", "day")),
    ],
    imp=["book a table at {rest} for {party} at {time}", "reserve a table for {party} at {rest} {day} at {time}",
         "get me a table at {rest} for {party} people",
         "make a reservation at {rest} for {party} {day}", "book {rest} for {party} people at {time}",
         "reserve {rest} for {party} {day}"],
    other=["can you book {rest} for {party} at {time}?", "table for {party} at {rest} at {time}", "could I get a table for {party} at {rest} {day}?"],
    held_imp=["grab us seats at {rest}, {party} of us, at {time}", "hold a table for {party} at {rest} around {time}"],
    held_other=["is {rest} free for {party} guests {day}?"],
)

family(
    "news", conflicts=("web_search",),
    slots={"topic": Values(W.NEWS_TOPICS, S.topic_name), "source": Values(W.NEWS_SOURCES, S.news_source),
           "n": Integer(2, 50, log=True)},
    variants=[
        V("get_news", "Get news on a topic.", P("topic", "string", "topic", req=True)),
        V("news.headlines", "Top headlines, optionally by source.",
          P("category", "string", "topic"), P("source", "string", "source")),
        V("fetchNews", "Fetches recent news articles.",
          P("query", "string", "topic", req=True), P("limit", "integer", "n")),
        V("latest_headlines", "Get the latest headlines.", P("topic", "string", "topic"), P("count", "integer", "n")),
    ],
    imp=["show me {topic} headlines", "give me the top {n} {topic} stories", "read me the headlines",
         "get the latest {topic} news", "show me the news from {source}", "give me {n} headlines about {topic}"],
    other=["what's the latest news on {topic}?", "news about {topic}", "what does {source} say about {topic}?",
           "any {topic} news today?", "what's in the news?"],
    held_imp=["catch me up on {topic}", "brief me on {topic} from {source}"],
    held_other=["anything new happening in {topic}?"],
)

family(
    "do_not_disturb", near=("timer",),
    slots={"power": POWER, "dur": DUR},
    variants=[
        V("set_do_not_disturb", "Turn do not disturb on or off.", P("enabled", "boolean", "power", req=True)),
        V("dnd.toggle", "Toggle do-not-disturb mode.",
          P("state", "string", "power", req=True, enum=["on", "off"], conv="flag_enum")),
        V("setFocusMode", "Sets focus mode, optionally for minutes.",
          P("active", "boolean", "power", req=True), P("minutes", "integer", "dur", conv="dur_m")),
        V("silence_notifications", "Silence notifications for a while.",
          P("duration_minutes", "integer", "dur", req=True, conv="dur_m"), fixed={"power": True}),
    ],
    imp=["turn {power} do not disturb", "switch do not disturb {power}", "turn {power} do not disturb for {dur}",
         "{power:en} do not disturb", "silence my notifications for {dur}", "{power:en} do not disturb for {dur}",
         "put my phone on do not disturb for {dur}"],
    other=["can you turn {power} do not disturb?", "I don't want notifications for {dur}"],
    held_imp=["flip do not disturb {power}", "hush all alerts for {dur}"],
    held_other=["could you {power:en} the do-not-disturb setting?"],
)

# --- split B: families held out whole -----------------------------------------------------------------


class TrackingNumber:
    """A parcel tracking number: letters and digits, copied verbatim."""

    def sample(self, rng, held, allowed=None):
        if rng.random() < 0.5:
            digits = "".join(pick(rng, "0123456789") for _ in range(10))
            text = "1Z" + "".join(pick(rng, "ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(4)) + digits
        else:
            text = "".join(pick(rng, "ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(2))
            text += "".join(pick(rng, "0123456789") for _ in range(9)) + pick(rng, ("GB", "DE", "US", "NL"))
        return SlotValue(text)


family(
    "fitness", split="B", near=("timer",),
    words=("workout", "workouts", "exercise", "exercises", "fitness", "calories"),
    slots={"activity": Values(W.ACTIVITIES, S.activity_name, holdout=False),
           "dur": Duration({"minute": (10, 300)}, {"hour": (1, 3)}), "dist": Amount(1, 200),
           "cal": Integer(50, 3000, words_p=0, log=True)},
    variants=[
        V("log_workout", "Log a completed workout.",
          P("activity", "string", "activity", req=True), P("duration_minutes", "integer", "dur", conv="dur_m")),
        V("fitness.record", "Record an exercise session.",
          P("exercise", "string", "activity", req=True), P("minutes", "integer", "dur", req=True, conv="dur_m"),
          P("distance_km", "number", "dist")),
        V("addWorkout", "Adds a workout to your fitness log.",
          P("type", "string", "activity", req=True), P("calories", "integer", "cal")),
    ],
    imp=["log a {activity} workout of {dur}", "record {dur} of {activity}", "log my {activity}: {dur}",
         "add a workout: {activity} for {dur}", "log a {activity} of {dist} km lasting {dur}",
         "log a {activity} workout, {cal} calories"],
    other=["I did {dur} of {activity}, can you log it?", "can you record a {activity} session of {dur}?"],
)

family(
    "recipes", split="B", conflicts=("web_search",),
    words=("recipe", "recipes", "ingredient", "ingredients"),
    slots={"dish": Values(W.DISHES, S.dish_name, holdout=False), "diet": Word(W.DIETS),
           "mins": Integer(5, 300, step=5), "servings": Integer(2, 24)},
    variants=[
        V("find_recipe", "Find a recipe for a dish.",
          P("dish", "string", "dish", req=True), P("diet", "string", "diet", enum=W.DIETS)),
        V("recipes.search", "Search recipes with a time limit.",
          P("query", "string", "dish", req=True), P("max_minutes", "integer", "mins")),
        V("getRecipe", "Gets a recipe scaled to servings.",
          P("name", "string", "dish", req=True), P("servings", "integer", "servings")),
    ],
    imp=["find a recipe for {dish}", "show me a {diet} recipe for {dish}",
         "find a {dish} recipe that takes under {mins} minutes", "get me a recipe for {dish} for {servings} people",
         "look up a {diet} {dish} recipe"],
    other=["how do I make {dish}?", "what's a good recipe for {dish}?", "any quick {dish} recipe under {mins} minutes?"],
)

family(
    "podcasts", split="B", near=("music_play",),
    words=("podcast", "podcasts", "episode", "episodes"),
    slots={"show": Values(W.PODCAST_SHOWS, S.show_name, holdout=False), "ep": Integer(1, 2500, log=True),
           "latest": only_true("latest", "newest")},
    variants=[
        V("play_podcast", "Play a podcast episode.",
          P("show", "string", "show", req=True), P("episode", "integer", "ep")),
        V("podcasts.play", "Play a podcast.",
          P("name", "string", "show", req=True), P("latest", "boolean", "latest")),
        V("playEpisode", "Plays an episode of a show.",
          P("podcast", "string", "show", req=True), P("episodeNumber", "integer", "ep", req=True)),
    ],
    imp=["play the podcast {show}", "play episode {ep} of {show}", "put on the {latest} episode of {show}",
         "play the {show} podcast", "start {show} episode {ep}"],
    other=["I want to listen to the {show} podcast", "can you play the {latest} {show} episode?"],
)

family(
    "stocks", split="B", conflicts=("web_search",),
    words=("stock", "stocks", "ticker", "tickers", "shares", "portfolio"),
    slots={"ticker": Values(W.TICKERS, S.ticker, holdout=False),
           "company": Values(W.COMPANIES, S.company_name, holdout=False)},
    variants=[
        V("get_stock_price", "Get the latest stock price.", P("ticker", "string", "ticker", req=True)),
        V("stocks.quote", "Quote for a stock symbol.", P("symbol", "string", "ticker", req=True)),
        V("getShareValue", "Gets the share price of a company.", P("company", "string", "company", req=True)),
        V("stock_lookup", "Look up a company's stock.", P("name", "string", ("company", "ticker"), req=True)),
    ],
    imp=["get me a quote for {ticker}", "check {company} shares", "show the {ticker} stock price",
         "look up {company} stock"],
    other=["what's the stock price of {ticker}?", "how is {company} stock doing?", "{ticker} share price?",
           "how much are {company} shares worth?"],
)

family(
    "hotels", split="B", conflicts=("web_search",),
    words=("hotel", "hotels", "lodging"),
    slots={"city": Values(W.CITIES, S.city_name, holdout=False), "nights": Integer(2, 60, log=True),
           "guests": Integer(2, 20),
           "day": DAY},
    variants=[
        V("search_hotels", "Search hotels in a city.",
          P("city", "string", "city", req=True), P("check_in", "string", "day"),
          P("nights", "integer", "nights")),
        V("hotels.find", "Find hotel rooms.",
          P("location", "string", "city", req=True), P("checkin_date", "string", "day"),
          P("guests", "integer", "guests")),
        V("bookHotel", "Books a hotel stay.",
          P("destination", "string", "city", req=True), P("arrival", "string", "day", req=True),
          P("nights", "integer", "nights", req=True)),
    ],
    imp=["find a hotel in {city} {day} for {nights} nights", "search hotels in {city} for {guests} guests",
         "book a hotel in {city} {day} for {nights} nights", "find me a hotel in {city}",
         "look for hotels in {city} {day}"],
    other=["any hotels in {city} for {guests} people {day}?", "I need a hotel in {city} for {nights} nights"],
)

family(
    "package_tracking", split="B", conflicts=("web_search",),
    words=("parcel", "parcels", "package", "packages", "shipment", "shipments", "tracking", "courier"),
    slots={"num": TrackingNumber(),
           "carrier": Word(W.CARRIERS, novel=S.carrier_name, novel_p=0.3, forms={"ups": ["UPS"], "fedex": ["FedEx"], "dhl": ["DHL"],
                                              "usps": ["USPS"], "royal mail": ["Royal Mail"], "dpd": ["DPD"]})},
    variants=[
        V("track_package", "Track a package by number.",
          P("tracking_number", "string", "num", req=True), P("carrier", "string", "carrier", enum=W.CARRIERS)),
        V("parcels.status", "Status of a parcel.", P("id", "string", "num", req=True)),
        V("whereIsMyShipment", "Finds where a shipment is.",
          P("number", "string", "num", req=True), P("courier", "string", "carrier")),
    ],
    imp=["track package {num}", "track my {carrier} shipment {num}", "check tracking number {num} with {carrier}",
         "find parcel {num}"],
    other=["where is my parcel {num}?", "what's the status of package {num}?", "where's my {carrier} package {num}?"],
)

# --- indexes and checks -------------------------------------------------------------------------------

BY_NAME = {f.name: f for f in FAMILIES}
TRAIN_FAMILIES = [f for f in FAMILIES if f.split == "train"]
B_FAMILIES = [f for f in FAMILIES if f.split == "B"]
B_WORDS = set().union(*(f.words for f in B_FAMILIES))
B_TOOL_NAMES = {v.name for f in B_FAMILIES for v in f.variants}



def value_lists(kind):
    """The Values objects whose curated lists a slot kind draws from (a Person has two, an Either
    several)."""
    if isinstance(kind, Values):
        return kind.curated_lists()
    if isinstance(kind, Either):
        return [c for k in kind.kinds for c in value_lists(k)]
    return []


def is_value_source(kind):
    """Whether a slot kind's values are copied values of Values sources (names, places, free text
    ...): the values split A holds out (data.novel_values)."""
    kinds = kind.kinds if isinstance(kind, Either) else (kind,)
    return all(isinstance(k, Values) for k in kinds)


# A value held out of one list is held out of every list ("Sofia" is a name and a city), so no
# held-out value is ever a training argument. The set is the value rules' (slots.RULES): a value
# built for a training request never equals one either.
HELD_VALUES = S.RULES.held_values
for _f in TRAIN_FAMILIES:
    for _kind in _f.slots.values():
        for _c in value_lists(_kind):
            if _c.holdout:
                HELD_VALUES.update(_c.held)


def apply_held_values():
    """Take every held-out value out of the training side of every family's curated lists (again
    whenever HELD_VALUES grows: invented.py adds its own held-out values)."""
    for f in TRAIN_FAMILIES:
        for kind in f.slots.values():
            for c in value_lists(kind):
                if c.holdout:
                    c.train = [v for v in c.train if v not in HELD_VALUES]
                    if not c.train:
                        raise ValueError(f"family {f.name}: a value list has no training values left")


apply_held_values()
HELD_VALUES.update(f"{a} {b}" for a, b in _UNIT_HELD)

# No value contains a split-B word; no built value contains a word that a request uses as an enum or
# switch word (slots.ValueRules).
S.RULES.banned_words.update(B_WORDS)
for _f in FAMILIES:
    for _kind in _f.slots.values():
        for _k in getattr(_kind, "kinds", (_kind,)):
            if isinstance(_k, Word):
                for _w in _k.items + [x for forms in _k.forms.values() for x in forms]:
                    S.RULES.request_words.update(S.letter_runs(_w))
            if isinstance(_k, Flag):
                for _forms in _k.forms.values():
                    for _w in _forms[0] + _forms[1]:
                        S.RULES.request_words.update(S.letter_runs(_w))

# Relations are symmetric: make them so.
for _f in FAMILIES:
    for _g in list(_f.near):
        if _g in BY_NAME:
            BY_NAME[_g].near.add(_f.name)
    for _g in list(_f.conflicts):
        if _g in BY_NAME:
            BY_NAME[_g].conflicts.add(_f.name)

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def name_words(name):
    """The words of an identifier: set_timer, createTimer, timer.create -> set timer / create timer."""
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", _CAMEL.sub(" ", name)) if w]


# Words of every family tool name and parameter name, plus the intents' own nouns and verbs:
# invented tools may not use them, so an invented tool can never fit a family's request.
FAMILY_WORDS = set(B_WORDS)
for _f in FAMILIES:
    FAMILY_WORDS.add(_f.name)
    FAMILY_WORDS.update(name_words(_f.name))
    for _v in _f.variants:
        FAMILY_WORDS.update(name_words(_v.name))
        for _p in _v.params:
            FAMILY_WORDS.update(name_words(_p.name))
FAMILY_WORDS.update("""timer alarm remind reminder calendar event meeting message text sms email mail call
phone dial navigate directions route ride taxi cab car weather forecast light lights lamp lamps thermostat
temperature heating lock unlock door music song songs track play playlist volume mute note notes
shopping list grocery groceries search web internet translate translation convert conversion currency
exchange money pay payment transfer flight flights plane restaurant table reservation news headlines
disturb focus notifications countdown wake""".split())

def words_in(text):
    """Lowercase letter runs of `text`, with identifiers split (trackPackage -> track, package)."""
    return S.letter_runs(text)


def train_visible_texts():
    """Every string a training prompt is built from (templates, values, tools) of the train families."""
    out = []
    for f in TRAIN_FAMILIES:
        out += [t.text for t in f.templates + f.held_templates]
        for v in f.variants:
            out.append(v.name)
            out += v.descs
            for p in v.params:
                out.append(p.name)
                out += [p.desc or ""] + [str(e) for e in p.enum or []]
        for kind in f.slots.values():
            for k in getattr(kind, "kinds", (kind,)):
                for attr in ("train", "held", "items", "values"):
                    out += [str(x) for x in getattr(k, attr, [])]
                for sub in ("first", "surnames"):
                    if hasattr(k, sub):
                        out += getattr(k, sub).train + getattr(k, sub).held
                out += [w for words in getattr(k, "forms", {}).values() for w in
                        (words if isinstance(words, list) else [x for ws in words for x in ws])]
    out += [f"{a} {b}" for a, b in W.UNIT_PAIRS]
    # The fixed words that built values are made of (slots.py, "Built values").
    out += (W.STREET_TYPES + W.PLACE_KINDS + W.CITY_FORMS + W.RESTAURANT_KINDS + W.COMPANY_SUFFIXES
            + W.MASTHEADS + W.DEVICE_NOUNS + W.COLOURS + W.GENRE_WORDS + W.EMAIL_TLDS + W.SHOW_FORMS)
    return out


def check_b_words():
    """No split-B word in anything a training prompt is built from; raises with the offender."""
    for text in train_visible_texts():
        bad = words_in(text) & B_WORDS
        if bad:
            raise ValueError(f"split-B word {sorted(bad)[0]!r} in training material: {text!r}")


check_b_words()
