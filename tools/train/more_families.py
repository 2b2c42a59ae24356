"""More tool families for the training split only: data.py --more-families draws from them.

The 26 training families of families.py are the only intents a model trained on them has read in
natural requests; split B asks for six others. These 25 families (split "extra") widen what the
training split asks for, so that a model meets many more intents, each with its own tools, and must
read the tools it is offered rather than recognise 26 frames (docs/training-data.md, "More
families"). A second 25 (SECOND_FAMILIES, data.py --second-families) widen it again, and a third
(THIRD_FAMILIES, data.py --third-families) again. They never appear in the held-out splits, which
stay those of the seed without them.

They are kept apart from families.FAMILIES on purpose: the data made without --more-families must
be the data made before they existed, byte for byte (and the data made with --more-families alone the
data made before the second 25 existed, and with --second-families the data made before the third),
so nothing here changes a list or set that the other splits draw from (FAMILY_WORDS, the value
rules' request words, the invented vocabulary).
Importing this module only adds their names to families.BY_NAME and their relations to the sets of
the families they name, which the generator reads by membership alone. In place of those lists:
- check(), at import: no split-B word anywhere in their material (check_b_words's rule), and no
  tool name of theirs with a word of wordlists.INVENTED_VERBS or INVENTED_NOUNS, so that an invented
  tool (a verb and a noun) never fits their requests;
- the generator rejects EXTRA_WORDS (and SECOND_WORDS with --second-families, THIRD_WORDS with
  --third-families) as open tool words when it draws from them (data.py).
Their enum and switch words (drinks, camera modes ...) are not among the value rules' request words,
so a built value may rarely contain one ("espresso"); the requests still say which tool they want.
"""

import families as F
import slots as S
import wordlists as W
from families import P, V, Family
from slots import Duration, Integer, Amount, Flag, SlotValue, Values, Word, pick


def declarer(batch):
    """A function that declares a family of the extra split (Family's arguments) into `batch`."""
    def declare(name, **kwargs):
        f = Family(name, split="extra", **kwargs)
        batch.append(f)
        return f
    return declare


EXTRA_FAMILIES = []
extra = declarer(EXTRA_FAMILIES)


# --- value lists and builders -------------------------------------------------------------------------

MOVIES = W.words("""
The Long Night|Paper Moons|Silver Harbor|Last Light|Northern Lights|The Quiet Field|Glass Houses|
Open Water|The Iron Road|Small Hours|Red Meadow|The Far Shore|Winter Garden|Borrowed Time|Blue Hour
""")
CINEMAS = W.words("Odeon Central|Rex Cinema|Plaza Theater|Roxy|the multiplex|Lumière|Electric Palace|Grand Cinema")
APPS = W.words("""
WhatsApp|Slack|Zoom|Firefox|Telegram|Signal|Kindle|Excel|Figma|Notion|Trello|Duolingo|Photoshop|
Chrome|Safari|Outlook|Teams|Discord|Evernote|Dropbox
""")
TEAMS = W.words("""
Lakers|Celtics|Yankees|Red Sox|Arsenal|Chelsea|Bayern|Real Madrid|Ajax|Juventus|Packers|Giants|
Bruins|Maple Leafs|Warriors|Dodgers|Liverpool|Barcelona|Benfica|Porto
""")
LEAGUES = ["NBA", "NFL", "NHL", "MLB", "MLS"]
MASCOTS = W.words("Hawks|Tigers|Rovers|Rangers|Falcons|Wolves|Comets|United|Athletic|Mariners|Lions")
TERMS = W.words("""
serendipity|ephemeral|ubiquitous|quixotic|laconic|obfuscate|petrichor|sonder|liminal|halcyon|
mellifluous|gregarious|pernicious|sanguine|taciturn|esoteric|ineffable|pragmatic|verbose|zenith
""")
ZONES = W.words("back lawn|front yard|vegetable beds|flower beds|side garden|rose bed|hedge row|herb patch")
DRINKS = ["espresso", "latte", "cappuccino", "americano", "flat white", "mocha"]
CUP_SIZES = ["small", "medium", "large"]
PET_NAMES = W.words("Biscuit|Luna|Milo|Bella|Oscar|Coco|Pepper|Ziggy|Nala|Rufus|Mochi|Tigger")
CAMERA_MODES = ["portrait", "panorama", "night", "selfie"]
VACUUM_MODES = ["quiet", "standard", "turbo"]
PLATFORMS = ["Twitter", "Mastodon", "Instagram", "Facebook", "LinkedIn", "Bluesky"]
PROVIDERS = W.words("Dr. Patel|Dr. Okafor|Dr. Lindqvist|Dr. Moreau|the dentist|the optician|the vet|Dr. Ito")
DEVICES = W.words("tablet|laptop|smartwatch|e-reader|work laptop|car keys|wallet tag|kid's tablet")
BOOKS = W.words("""
Middlemarch|The Hobbit|Dune|Beloved|Persuasion|Ulysses|Emma|Rebecca|The Road|Atonement|Frankenstein|
Dracula|Kindred|Solaris|Possession
""")
BILLERS = W.words("City Power|Northwind Water|Metro Gas|Fibrelink|Comcast|Thames Water|EDF|Verizon")
BILLER_KINDS = W.words("Energy|Water|Gas|Telecom|Broadband|Electric|Mobile")


def team_name(rng, lex):
    return f"{lex.name(rng)} {pick(rng, MASCOTS)}"


def zone_name(rng, lex):
    return f"{lex.word(rng)} {pick(rng, ('bed', 'lawn', 'border', 'patch', 'strip'))}"


def pet_name(rng, lex):
    return lex.name(rng)


def provider_name(rng, lex):
    return f"Dr. {lex.name(rng)}"


def device_name(rng, lex):
    return f"{lex.name(rng)}'s {pick(rng, ('tablet', 'laptop', 'smartwatch', 'e-reader'))}"


def biller_name(rng, lex):
    return f"{S.cap(lex.word(rng))} {pick(rng, BILLER_KINDS)}"


def app_name(rng, lex):
    return S.cap(lex.word(rng)) + pick(rng, ("", "ly", "Hub", "", " Pro"))


def one_word(rng, lex):
    return lex.word(rng)


def parking_zone(rng, lex):
    return f"{pick(rng, 'ABCDEFGHKMNPRSTZ')}{rng.randint(1, 999)}"


def expression(rng, lex):
    """An arithmetic expression as a user types it: "37 * 12", "1250 / 5", "18% of 240"."""
    a, b = rng.randint(2, 2000), rng.randint(2, 99)
    r = rng.random()
    if r < 0.2:
        return f"{b}% of {a}"
    if r < 0.35:
        return f"{a} + {b} + {rng.randint(2, 99)}"
    return f"{a} {pick(rng, ('*', '/', '+', '-', 'x'))} {b}"


class Built:
    """A value made by `build(rng, None)` alone (no words), that passes the value rules (no held-out
    value of split A, retried up to 50 times)."""

    def __init__(self, build):
        self.build = build

    def sample(self, rng, held, allowed=None):
        for _ in range(50):
            text = self.build(rng, None)
            if S.RULES.allows(text, held):
                return SlotValue(text)
        raise S.Unfillable("no value passes the value rules in 50 draws")


ROOMS, PERSON, PLACES, CITIES, MESSAGES = F.ROOMS, F.PERSON, F.PLACES, F.CITIES, F.MESSAGES
POWER, DAY, TIME = F.POWER, F.DAY, F.TIME


def kept(items, build, free=False):
    """A copied value with no held-out part: these lists never reach split A."""
    return Values(items, build, free=free, holdout=False)


# --- devices and the home --------------------------------------------------------------------------------

extra(
    "tv_channel", near=("volume",),
    slots={"ch": Integer(1, 999, words_p=0, log=True), "room": ROOMS},
    variants=[
        V("set_tv_channel", "Switch the TV to a channel.", P("channel", "integer", "ch", req=True)),
        V("tv.switch_channel", "Switch the television channel.", P("number", "integer", "ch", req=True), P("room", "string", "room")),
        V("changeChannel", "Changes the TV channel.", P("channelNumber", "integer", "ch", req=True)),
    ],
    imp=["switch the TV to channel {ch}", "put on channel {ch}", "change the channel to {ch}",
         "tune the TV in the {room} to channel {ch}", "go to channel {ch} on the television",
         "flip the {room} TV over to channel {ch}"],
    other=["can you switch to channel {ch}?", "channel {ch} please", "I want to watch channel {ch} in the {room}"],
)

extra(
    "wifi", near=("bluetooth",),
    slots={"power": POWER},
    variants=[
        V("set_wifi", "Turn Wi-Fi on or off.", P("enabled", "boolean", "power", req=True)),
        V("wifi.toggle", "Toggle the wireless network.",
          P("state", "string", "power", req=True, enum=["on", "off"], conv="flag_enum")),
        V("setWirelessRadio", "Switches the Wi-Fi radio.", P("on", "boolean", "power", req=True)),
    ],
    imp=["turn {power} the wifi", "switch wifi {power}", "turn {power} wi-fi", "{power:en} wifi",
         "{power:en} the wireless network", "switch the Wi-Fi {power}"],
    other=["can you turn the wifi {power}?", "wifi {power} please"],
)

extra(
    "bluetooth", near=("wifi",),
    slots={"power": POWER},
    variants=[
        V("set_bluetooth", "Turn Bluetooth on or off.", P("enabled", "boolean", "power", req=True)),
        V("bluetooth.power", "Bluetooth radio power.",
          P("state", "string", "power", req=True, enum=["ON", "OFF"], conv="flag_enum")),
        V("toggleBluetooth", "Switches Bluetooth.", P("active", "boolean", "power", req=True)),
    ],
    imp=["turn {power} bluetooth", "switch bluetooth {power}", "{power:en} bluetooth",
         "turn bluetooth {power} on my phone"],
    other=["can you switch bluetooth {power}?", "bluetooth {power}, thanks"],
)

extra(
    "flashlight",
    slots={"power": POWER},
    variants=[
        V("toggle_flashlight", "Turn the flashlight on or off.", P("on", "boolean", "power", req=True)),
        V("torch.set", "Set the torch.", P("state", "string", "power", req=True, enum=["on", "off"],
                                           conv="flag_enum")),
        V("setFlashlight", "Sets the phone's flashlight.", P("enabled", "boolean", "power", req=True)),
    ],
    imp=["turn {power} the flashlight", "switch the torch {power}", "{power:en} the flashlight",
         "turn the torch {power}", "switch {power} my flashlight"],
    other=["flashlight {power}", "can you turn {power} my torch?", "it's dark, flashlight {power} please"],
)

extra(
    "battery_saver",
    slots={"power": POWER},
    variants=[
        V("set_battery_saver", "Turn battery saver on or off.", P("enabled", "boolean", "power", req=True)),
        V("power.saving_mode", "Low power mode.", P("state", "string", "power", req=True, enum=["on", "off"],
                                                   conv="flag_enum")),
        V("setLowPowerMode", "Sets low power mode.", P("on", "boolean", "power", req=True)),
    ],
    imp=["turn {power} battery saver", "switch low power mode {power}", "{power:en} battery saver",
         "{power:en} power saving mode", "turn {power} low power mode"],
    other=["battery saver {power} please", "can you turn {power} low power mode?"],
)

extra(
    "robot_vacuum",
    slots={"room": ROOMS, "mode": Word(VACUUM_MODES)},
    variants=[
        V("start_vacuum", "Start the robot vacuum.", P("room", "string", "room")),
        V("vacuum.clean", "Send the cleaner to a room.", P("area", "string", "room", req=True),
          P("mode", "string", "mode", enum=VACUUM_MODES)),
        V("runRoboVac", "Runs the vacuum.", P("room", "string", "room"),
          P("suction", "string", "mode", enum=[m.upper() for m in VACUUM_MODES])),
    ],
    imp=["vacuum the {room}", "start the vacuum", "run the vacuum in the {room}",
         "send the vacuum to the {room} on {mode} mode", "vacuum the {room} in {mode} mode",
         "start vacuuming the {room}"],
    other=["can the vacuum do the {room}?", "the {room} floor needs vacuuming", "vacuum in {mode} mode please"],
)

extra(
    "sprinklers",
    slots={"zone": kept(ZONES, zone_name), "dur": Duration({"minute": (5, 120)}, {"hour": (1, 2)})},
    variants=[
        V("run_sprinklers", "Run the garden sprinklers.", P("zone", "string", "zone", req=True),
          P("minutes", "integer", "dur", conv="dur_m")),
        V("irrigation.start", "Start irrigation for a zone.", P("area", "string", "zone", req=True),
          P("duration_minutes", "integer", "dur", req=True, conv="dur_m")),
        V("startSprinkler", "Turns on a sprinkler zone.", P("zoneName", "string", "zone", req=True)),
    ],
    imp=["run the sprinklers in the {zone} for {dur}", "turn on the sprinkler in the {zone}",
         "start the {zone} sprinklers", "irrigate the {zone} for {dur}", "run the {zone} sprinkler"],
    other=["the {zone} needs the sprinklers for {dur}", "can you run the sprinklers in the {zone}?"],
)

extra(
    "coffee",
    slots={"drink": Word(DRINKS), "size": Word(CUP_SIZES), "cups": Integer(2, 6)},
    variants=[
        V("make_coffee", "Make a coffee on the machine.", P("drink", "string", "drink", req=True, enum=DRINKS),
          P("size", "string", "size", enum=CUP_SIZES)),
        V("coffee_machine.start", "Start the coffee maker.", P("beverage", "string", "drink", req=True)),
        V("prepareCoffee", "Prepares a hot drink.", P("type", "string", "drink", req=True),
          P("cups", "integer", "cups")),
    ],
    imp=["make me a {drink}", "make a {size} {drink}", "start the coffee machine for a {drink}",
         "prepare {cups} cups of {drink}", "get the machine going on a {size} {drink}"],
    other=["could I get a {size} {drink} from the machine?", "I'd love a {drink}", "{cups} {drink}s please"],
)

extra(
    "pet_feeder",
    slots={"portions": Integer(1, 6), "pet": kept(PET_NAMES, pet_name)},
    variants=[
        V("dispense_pet_food", "Dispense food from the pet feeder.",
          P("portions", "integer", "portions", req=True)),
        V("petfeeder.serve", "Serve a meal to a pet.", P("pet", "string", "pet", req=True),
          P("cups", "integer", "portions")),
        V("feederDispense", "Drops portions into the bowl.", P("amount", "integer", "portions", req=True),
          P("petName", "string", "pet")),
    ],
    imp=["give {pet} {portions} portions from the feeder", "dispense {portions} portions of pet food",
         "put {portions} scoops in {pet}'s bowl", "serve {pet} dinner from the feeder"],
    other=["{pet} is hungry, dispense {portions} portions", "can the feeder give {pet} some food?"],
)

extra(
    "camera",
    slots={"mode": Word(CAMERA_MODES), "delay": Integer(2, 10)},
    variants=[
        V("take_photo", "Take a photo with the camera.", P("mode", "string", "mode", enum=CAMERA_MODES),
          P("delay_seconds", "integer", "delay")),
        V("camera.capture", "Capture a picture.", P("self_timer", "integer", "delay", desc="Delay in seconds")),
        V("snapPicture", "Snaps a picture.", P("cameraMode", "string", "mode")),
    ],
    imp=["take a photo", "take a {mode} photo", "take a picture in {mode} mode", "snap a photo in {delay} seconds",
         "take a photo with a {delay} second delay"],
    other=["can you take a picture?", "I want a {mode} shot", "photo in {delay} seconds please"],
)

extra(
    "car_start", near=("thermostat",),
    slots={"dur": Duration({"minute": (5, 30)}, {"hour": (1, 1)}), "temp": Integer(16, 28, words_p=0)},
    variants=[
        V("start_car", "Start the car's engine remotely.", P("warm_up_minutes", "integer", "dur", conv="dur_m")),
        V("vehicle.remote_start", "Remote-start the vehicle.", P("climate_temp", "integer", "temp",
                                                                  desc="Cabin temperature in Celsius")),
        V("startEngine", "Starts the engine of your car.", P("minutes", "integer", "dur", conv="dur_m")),
    ],
    imp=["start the car", "remote start my car", "start the car for {dur}", "start my car and warm it to {temp} degrees",
         "get the car engine running for {dur}"],
    other=["can you start the car?", "it's cold, start my car and set the cabin to {temp} degrees"],
)

# --- people, places, things to do ------------------------------------------------------------------------

extra(
    "contacts", near=("phone_call", "message"),
    slots={"person": PERSON, "number": Values(W.PHONE_NUMBERS, S.phone_number),
           "mail": Values(W.EMAIL_ADDRESSES, S.email_address)},
    variants=[
        V("add_contact", "Save a new contact.", P("name", "string", "person", req=True),
          P("phone", "string", "number")),
        V("contacts.create", "Create an address book entry.", P("full_name", "string", "person", req=True),
          P("phone_number", "string", "number"), P("email", "string", "mail")),
        V("saveContact", "Saves a person to contacts.", P("displayName", "string", "person", req=True),
          P("number", "string", "number", req=True)),
    ],
    imp=["add {person} to my contacts", "save {number} as {person}", "create a contact for {person} with the number {number}",
         "add {person} to my address book with email {mail}", "store {person}, {number}, in my contacts"],
    other=["new contact: {person}, {number}", "can you save {person} as a contact? the number is {number}"],
)

extra(
    "movie_tickets",
    slots={"movie": kept(MOVIES, S.song_title), "count": Integer(1, 12), "time": TIME,
           "cinema": kept(CINEMAS, S.place_name)},
    variants=[
        V("buy_movie_tickets", "Buy cinema tickets.", P("movie", "string", "movie", req=True),
          P("tickets", "integer", "count"), P("showtime", "string", "time")),
        V("cinema.book", "Book seats for a film.", P("film", "string", "movie", req=True),
          P("seats", "integer", "count", req=True)),
        V("reserveMovieSeats", "Reserves seats at the cinema.", P("title", "string", "movie", req=True),
          P("quantity", "integer", "count"), P("theater", "string", "cinema")),
    ],
    imp=["get me {count} tickets for {movie}", "book {count} seats for {movie} at {time}", "buy tickets for {movie}",
         "reserve {count} seats for {movie} at {cinema}", "book the {time} showing of {movie}"],
    other=["can I get {count} tickets to see {movie}?", "I'd like to see {movie} at {time}, {count} tickets"],
)

extra(
    "parking", near=("navigation",),
    slots={"place": PLACES, "zone": Built(parking_zone), "hrs": Integer(2, 12)},
    variants=[
        V("find_parking", "Find a parking spot near a place.", P("near", "string", "place", req=True)),
        V("parking.pay", "Pay for parking in a zone.", P("zone", "string", "zone", req=True),
          P("hours", "integer", "hrs")),
        V("startParkingSession", "Starts a paid parking session.", P("zoneCode", "string", "zone", req=True),
          P("durationHours", "integer", "hrs", req=True)),
    ],
    imp=["find parking near {place}", "find me a parking spot near {place}", "pay for parking in zone {zone}",
         "pay for {hrs} hours of parking in zone {zone}", "start parking in zone {zone} for {hrs} hours"],
    other=["where can I park near {place}?", "I parked in zone {zone}, pay for {hrs} hours"],
)

extra(
    "sports_scores", conflicts=("web_search", "news"),
    slots={"team": kept(TEAMS, team_name), "league": Word(LEAGUES)},
    variants=[
        V("get_match_result", "Latest result for a team.", P("team", "string", "team", req=True)),
        V("sports.results", "Recent results in a league.", P("league", "string", "league", req=True, enum=LEAGUES),
          P("team", "string", "team")),
        V("fetchGameResult", "Fetches the result of a team's last game.", P("teamName", "string", "team", req=True)),
    ],
    imp=["get the score of the {team} game", "show me the {team} score", "check how the {team} did",
         "show {league} results", "get the latest {league} score for the {team}"],
    other=["did the {team} win?", "what was the score in the {team} game?", "how are the {team} doing in the {league}?"],
)

extra(
    "dictionary", conflicts=("web_search", "translate"),
    slots={"term": kept(TERMS, one_word)},
    variants=[
        V("define_word", "Look up a word's definition.", P("word", "string", "term", req=True)),
        V("dictionary.lookup", "Dictionary entry for a term.", P("term", "string", "term", req=True)),
        V("getDefinition", "Gets the meaning of a word.", P("query", "string", "term", req=True)),
    ],
    imp=["define {term}", "look up {term} in the dictionary", "give me the definition of {term}",
         "find the meaning of the word {term}"],
    other=["what does {term} mean?", "what's the definition of {term}?", "meaning of {term}?"],
)

extra(
    "calculator", conflicts=("web_search", "unit_convert", "currency_convert"),
    slots={"expr": Built(expression)},
    variants=[
        V("calculate", "Evaluate a math expression.", P("expression", "string", "expr", req=True)),
        V("math.eval", "Compute an arithmetic result.", P("expr", "string", "expr", req=True)),
        V("computeExpression", "Computes a formula.", P("formula", "string", "expr", req=True)),
    ],
    imp=["calculate {expr}", "work out {expr}", "compute {expr}", "do the math on {expr}"],
    other=["how much is {expr}?", "what's {expr}?", "can you do {expr} for me?"],
)

extra(
    "open_app",
    slots={"app": kept(APPS, app_name)},
    variants=[
        V("open_app", "Open an app on the phone.", P("app_name", "string", "app", req=True)),
        V("apps.open", "Open an application.", P("name", "string", "app", req=True)),
        V("startApplication", "Starts an application by name.", P("appName", "string", "app", req=True)),
    ],
    imp=["open {app}", "open the {app} app", "start {app}", "bring up {app}", "fire up the {app} app"],
    other=["can you open {app}?", "I need {app} open"],
)

extra(
    "social_post", near=("message",),
    slots={"text": MESSAGES, "platform": Word(PLATFORMS)},
    variants=[
        V("post_status", "Post a status update.", P("text", "string", "text", req=True),
          P("platform", "string", "platform")),
        V("social.publish", "Publish a post on social media.", P("content", "string", "text", req=True),
          P("network", "string", "platform", enum=PLATFORMS)),
        V("shareUpdate", "Posts an update for followers.", P("message", "string", "text", req=True)),
    ],
    imp=["post {text} on {platform}", "share {text} with my followers", "publish a post saying {text}",
         "update my status to {text}", "post on {platform}: {text}"],
    other=["can you post {text} to {platform}?"],
)

extra(
    "appointment", near=("calendar_event", "reminder"),
    slots={"doc": kept(PROVIDERS, provider_name), "day": DAY, "time": TIME},
    variants=[
        V("book_appointment", "Book an appointment.", P("provider", "string", "doc", req=True),
          P("date", "string", "day"), P("time", "string", "time")),
        V("appointments.schedule", "Schedule a visit.", P("with", "string", "doc", req=True),
          P("day", "string", "day", req=True)),
        V("makeAppointment", "Makes an appointment with a practitioner.",
          P("practitioner", "string", "doc", req=True), P("when", "string", "time")),
    ],
    imp=["book an appointment with {doc} {day}", "book me in with {doc} {day} at {time}",
         "make an appointment with {doc} at {time}", "schedule a visit to {doc} {day}"],
    other=["can I see {doc} {day}?", "I need an appointment with {doc} {day} at {time}"],
)

extra(
    "world_clock", near=("weather",), conflicts=("web_search",),
    slots={"city": CITIES},
    variants=[
        V("get_local_time", "Current time in a city.", P("city", "string", "city", req=True)),
        V("clock.world", "World clock lookup.", P("location", "string", "city", req=True)),
        V("timeIn", "Gets the time in a place.", P("place", "string", "city", req=True)),
    ],
    imp=["show the time in {city}", "check the local time in {city}", "get the current time in {city}",
         "tell me the time in {city}"],
    other=["what time is it in {city}?", "what's the time in {city} right now?", "is it late in {city}?"],
)

extra(
    "review", near=("restaurant",),
    slots={"place": PLACES, "stars": Integer(1, 5), "text": MESSAGES},
    variants=[
        V("leave_review", "Review a place.", P("place", "string", "place", req=True),
          P("stars", "integer", "stars", req=True), P("comment", "string", "text")),
        V("reviews.post", "Post a star rating.", P("venue", "string", "place", req=True),
          P("rating", "integer", "stars", req=True)),
        V("ratePlace", "Rates a place from 1 to 5.", P("name", "string", "place", req=True),
          P("score", "integer", "stars")),
    ],
    imp=["give {place} {stars} stars", "rate {place} {stars} out of 5", "leave a {stars} star review for {place}",
         "review {place}: {stars} stars, {text}"],
    other=["{place} deserves {stars} stars", "can you rate {place} {stars} stars?"],
)

extra(
    "find_device",
    slots={"device": kept(DEVICES, device_name)},
    variants=[
        V("ring_device", "Ring a lost device.", P("device", "string", "device", req=True)),
        V("finder.locate", "Locate a device on the map.", P("device_name", "string", "device", req=True)),
        V("playSoundOnDevice", "Plays a sound on a device to find it.", P("deviceName", "string", "device", req=True)),
    ],
    imp=["ring my {device}", "find my {device}", "make my {device} beep", "locate my {device}"],
    other=["I lost my {device}, can you ring it?", "help me find my {device}"],
)

extra(
    "library",
    slots={"book": kept(BOOKS, S.song_title), "weeks": Integer(1, 6)},
    variants=[
        V("renew_library_book", "Renew a borrowed library book.", P("title", "string", "book", req=True)),
        V("library.renew", "Extend a loan.", P("book_title", "string", "book", req=True),
          P("weeks", "integer", "weeks")),
        V("extendLoan", "Extends the loan of a book.", P("book", "string", "book", req=True)),
    ],
    imp=["renew {book} at the library", "renew my library book {book}", "extend the loan on {book} by {weeks} weeks",
         "renew {book} for {weeks} more weeks"],
    other=["can you renew {book}?", "I need {book} for {weeks} more weeks"],
)

extra(
    "bill_pay", near=("payment",),
    slots={"biller": kept(BILLERS, biller_name), "amount": Amount(5, 900)},
    variants=[
        V("pay_bill", "Pay a bill.", P("biller", "string", "biller", req=True), P("amount", "number", "amount")),
        V("bills.pay", "Pay a utility bill.", P("payee", "string", "biller", req=True),
          P("amount", "number", "amount", req=True)),
        V("payInvoice", "Pays an invoice.", P("vendor", "string", "biller", req=True), P("total", "number", "amount")),
    ],
    imp=["pay the {biller} bill", "pay my {biller} bill of {amount}", "settle the {biller} invoice for {amount}",
         "pay {amount} on the {biller} bill"],
    other=["the {biller} bill is due, can you pay it?", "I owe {biller} {amount} on my bill"],
)

# --- the second 25 (data.py --second-families) -------------------------------------------------------
# Drawn only with --second-families, as a share of the extra-family requests, so that the data made
# with --more-families alone is what it was before they existed, byte for byte.

SECOND_FAMILIES = []
second = declarer(SECOND_FAMILIES)


PCT = F.BY_NAME["lights"].slots["pct"]  # a percentage, as the lights family's requests write it
OPEN = Flag({"": (["open"], ["close"])})  # a switch written "open" or "close" (garage door, blinds)
FOODS = W.words("""
margherita pizza|pad thai|chicken burrito|sushi platter|veggie burger|ramen|chicken tikka masala|
falafel wrap|poke bowl|fish and chips|caesar salad|pepperoni pizza|pork dumplings|green curry|beef pho
""")
FILES = W.words("""
report.pdf|budget.xlsx|essay.docx|boarding pass.pdf|notes.txt|resume.pdf|slides.pptx|contract.pdf|
menu.pdf|thesis draft.docx|tax return.pdf|seating plan.xlsx
""")
FILE_QUERIES = W.words("""
tax return|holiday photos|project plan|wedding speech|cover letter|meeting minutes|birth certificate|
car insurance|floor plan|thesis draft|quarterly numbers|school report
""")
FOLDERS = ["Documents", "Downloads", "Desktop", "Pictures"]
SIGNS = ["aries", "taurus", "gemini", "cancer", "leo", "virgo", "libra", "scorpio", "sagittarius",
         "capricorn", "aquarius", "pisces"]
PERIODS = ["today", "tomorrow", "this week"]
DISH_PROGRAMS = ["eco", "quick", "normal", "intensive"]
SECURITY_MODES = ["away", "home", "night"]
RINGER_MODES = ["ring", "vibrate", "silent"]
SPENDING = ["groceries", "transport", "dining", "travel", "utilities", "entertainment"]
EXPENSE_NOTES = W.words("lunch|a taxi|train tickets|the plumber|coffee beans|a birthday present|parking|dinner out")
BOUQUETS = ["roses", "tulips", "lilies", "sunflowers", "peonies"]
ROADS = W.words("the M25|I-95|Route 66|the ring road|Highway 1|the A40|I-5|the bypass|Main Street|the coast road")
OCCASIONS = W.words("""
Christmas|New Year|Halloween|Easter|my birthday|our anniversary|the wedding|summer vacation|Thanksgiving|
graduation|the marathon|Diwali
""")
STATIONS = W.words("BBC Radio 2|Jazz FM|KEXP|Radio Paradise|Classic FM|NPR|Capital FM|WNYC|Radio Nova|Absolute Radio")


def food_name(rng, lex):
    return f"{lex.word(rng)} {pick(rng, ('bowl', 'wrap', 'burger', 'pizza', 'salad', 'curry', 'noodles'))}"


def file_name(rng, lex):
    return f"{lex.word(rng)}.{pick(rng, ('pdf', 'docx', 'txt', 'xlsx'))}"


def file_query(rng, lex):
    return f"{lex.word(rng)} {pick(rng, ('notes', 'photos', 'plan', 'invoices', 'draft', 'letter'))}"


def expense_note(rng, lex):
    return f"{pick(rng, ('a', 'the'))} {lex.word(rng)}"


def road_name(rng, lex):
    return f"{pick(rng, ('I-', 'Route ', 'Highway ', 'the A', 'the M'))}{rng.randint(1, 99)}"


def occasion_name(rng, lex):
    return f"{lex.name(rng)}'s {pick(rng, ('birthday', 'wedding', 'party', 'graduation'))}"


def station_name(rng, lex):
    return f"{S.cap(lex.word(rng))} {pick(rng, ('FM', 'Radio', 'Jazz', 'Gold'))}"


def booking_code(rng, lex):
    """An airline booking reference: six capitals and digits, "K7QZ2M"."""
    return "".join(pick(rng, "ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))


def calendar_date(rng, lex):
    return f"{pick(rng, W.MONTHS)} {rng.randint(1, 28)}"


second(
    "garage_door", near=("door_lock", "open_app"),
    slots={"open": OPEN},
    variants=[
        V("set_garage_door", "Open or close the garage door.", P("open", "boolean", "open", req=True)),
        V("garage.door", "Move the garage door.",
          P("action", "string", "open", req=True, enum=["open", "close"], conv="flag_enum")),
        V("operateGarage", "Opens or closes the garage.", P("open", "boolean", "open", req=True)),
    ],
    imp=["{open} the garage door", "{open} the garage", "please {open} the garage door", "{open} the garage now"],
    other=["can you {open} the garage?", "could you {open} the garage door for me?"],
)

second(
    "blinds", near=("lights",),
    slots={"room": ROOMS, "pct": PCT, "open": OPEN},
    variants=[
        V("set_blinds", "Open or close the blinds.", P("open", "boolean", "open", req=True), P("room", "string", "room")),
        V("blinds.position", "Set how far the blinds are open.", P("room", "string", "room", req=True),
          P("percent", "integer", "pct", req=True, minimum=0, maximum=100)),
        V("moveShades", "Moves the window shades.", P("open", "boolean", "open"), P("position", "integer", "pct"),
          P("area", "string", "room")),
    ],
    imp=["{open} the blinds", "{open} the {room} blinds", "set the {room} blinds to {pct}",
         "move the {room} shades to {pct}", "{open} the shades in the {room}"],
    other=["can you {open} the {room} blinds?", "blinds in the {room} at {pct} please"],
)

second(
    "ceiling_fan", near=("thermostat",),
    slots={"speed": Integer(1, 5), "room": ROOMS, "power": POWER},
    variants=[
        V("set_fan_speed", "Set the ceiling fan speed.", P("speed", "integer", "speed", req=True, minimum=1, maximum=5),
          P("room", "string", "room")),
        V("fan.power", "Turn a fan on or off.", P("on", "boolean", "power", req=True), P("room", "string", "room")),
        V("adjustFan", "Adjusts a fan.", P("level", "integer", "speed"), P("power", "boolean", "power"),
          P("location", "string", "room")),
    ],
    imp=["set the fan to speed {speed}", "turn the {room} fan to {speed}", "turn {power} the fan",
         "turn {power} the ceiling fan in the {room}", "put the {room} fan on speed {speed}", "{power:en} the fan"],
    other=["can you turn the fan {power}?", "fan to {speed} please"],
)

second(
    "dishwasher",
    slots={"prog": Word(DISH_PROGRAMS), "delay": Integer(1, 8)},
    variants=[
        V("start_dishwasher", "Start the dishwasher.", P("program", "string", "prog", enum=DISH_PROGRAMS)),
        V("dishwasher.run", "Run a dishwasher cycle.", P("cycle", "string", "prog", req=True),
          P("delay_hours", "integer", "delay")),
        V("runDishwasher", "Runs the dishwasher.", P("mode", "string", "prog", enum=[m.upper() for m in DISH_PROGRAMS]),
          P("startInHours", "integer", "delay")),
    ],
    imp=["start the dishwasher", "run the dishwasher on {prog}", "start a {prog} cycle on the dishwasher",
         "run the dishwasher in {delay} hours", "start the dishwasher on {prog} in {delay} hours"],
    other=["can you run the dishwasher?", "dishwasher on {prog} please"],
)

second(
    "security_system", near=("door_lock", "alarm"),
    slots={"mode": Word(SECURITY_MODES), "arm": Flag({"": (["arm"], ["disarm"])})},
    variants=[
        V("arm_security_system", "Arm the home security system.", P("mode", "string", "mode", enum=SECURITY_MODES),
          fixed={"arm": True}),
        V("security.set_state", "Arm or disarm the security system.", P("armed", "boolean", "arm", req=True),
          P("mode", "string", "mode")),
        V("setHomeSecurity", "Sets the security system.",
          P("state", "string", "arm", req=True, enum=["ARMED", "DISARMED"], conv="flag_enum")),
    ],
    imp=["{arm} the security system", "{arm} the home security system", "set the security system to {mode} mode",
         "arm the security system in {mode} mode"],
    other=["can you {arm} the security system?", "I'm heading out, set security to {mode}"],
)

second(
    "food_delivery", near=("restaurant",),
    slots={"food": kept(FOODS, food_name), "rest": F.BY_NAME["restaurant"].slots["rest"], "count": Integer(2, 6)},
    variants=[
        V("order_food", "Order food for delivery.", P("item", "string", "food", req=True),
          P("restaurant", "string", "rest"), P("quantity", "integer", "count")),
        V("delivery.place_order", "Place a delivery order from a restaurant.",
          P("restaurant", "string", "rest", req=True), P("items", "string", "food", req=True)),
        V("orderTakeout", "Orders takeout.", P("dish", "string", "food", req=True), P("qty", "integer", "count")),
    ],
    imp=["order a {food} from {rest}", "get me {count} portions of {food} delivered", "order {food} for delivery",
         "order {count} {food} from {rest}", "have {food} delivered from {rest}"],
    other=["can I get {food} delivered?", "I'd like {food} from {rest} delivered"],
)

second(
    "bike_share", near=("ride",),
    slots={"place": PLACES, "count": Integer(2, 4)},
    variants=[
        V("reserve_bike", "Reserve a shared bike.", P("station", "string", "place", req=True), P("bikes", "integer", "count")),
        V("bikeshare.unlock", "Unlock a bike at a station.", P("station_name", "string", "place", req=True)),
        V("findBike", "Finds an available bike.", P("near", "string", "place", req=True)),
    ],
    imp=["reserve a bike at {place}", "get me {count} bikes at {place}", "find a bike near {place}",
         "unlock a bike at {place}", "book {count} shared bikes at {place}"],
    other=["is there a bike free near {place}?", "can you hold a bike for me at {place}?"],
)

second(
    "train_times", near=("flights", "navigation"),
    slots={"from": CITIES, "to": CITIES, "time": TIME},
    joint=F._distinct("from", "to"),
    variants=[
        V("get_train_times", "Train departures between two cities.", P("origin", "string", "from", req=True),
          P("destination", "string", "to", req=True)),
        V("rail.departures", "Next trains from a station.", P("from_station", "string", "from", req=True),
          P("to_station", "string", "to"), P("after", "string", "time")),
        V("findTrainConnection", "Finds a rail connection.", P("from", "string", "from", req=True),
          P("to", "string", "to", req=True), P("departAfter", "string", "time")),
    ],
    imp=["show trains from {from} to {to}", "find a train from {from} to {to} after {time}",
         "check the next trains from {from}", "get the train times from {from} to {to}"],
    other=["when is the next train from {from} to {to}?", "are there trains from {from} to {to} after {time}?"],
)

second(
    "horoscope",
    slots={"sign": Word(SIGNS, forms={s: [s.capitalize(), s] for s in SIGNS}), "when": Word(PERIODS)},
    variants=[
        V("get_horoscope", "Horoscope for a star sign.", P("sign", "string", "sign", req=True, enum=SIGNS)),
        V("astrology.reading", "A horoscope reading.", P("zodiac_sign", "string", "sign", req=True),
          P("period", "string", "when", enum=PERIODS)),
        V("fetchHoroscope", "Fetches a horoscope.", P("starSign", "string", "sign", req=True)),
    ],
    imp=["read my horoscope for {sign}", "get the {sign} horoscope", "show me the horoscope for {sign} {when}",
         "pull up the {sign} horoscope"],
    other=["what does the horoscope say for {sign}?", "anything in the stars for {sign} {when}?"],
)

second(
    "air_quality", near=("weather",),
    slots={"city": CITIES, "day": DAY},
    variants=[
        V("get_air_quality", "Air quality index for a city.", P("city", "string", "city", req=True)),
        V("aqi.lookup", "Air pollution levels.", P("location", "string", "city", req=True), P("date", "string", "day")),
        V("checkPollution", "Checks pollution in a place.", P("place", "string", "city", req=True)),
    ],
    imp=["check the air quality in {city}", "get the pollution level in {city} {day}", "show the AQI for {city}",
         "look up air pollution in {city}"],
    other=["how's the air quality in {city}?", "is the air clean in {city} {day}?"],
)

second(
    "password",
    slots={"len": Integer(8, 64, words_p=0), "symbols": Flag({"": (["with"], ["without"])})},
    variants=[
        V("generate_password", "Generate a random password.", P("length", "integer", "len", req=True),
          P("symbols", "boolean", "symbols")),
        V("passwords.create", "Create a strong password.", P("length", "integer", "len")),
        V("makePassword", "Makes a new password.", P("chars", "integer", "len"),
          P("includeSymbols", "boolean", "symbols")),
    ],
    imp=["generate a {len} character password", "make me a password {symbols} symbols",
         "create a {len}-character password {symbols} symbols", "generate a new password"],
    other=["I need a new password, {len} characters {symbols} symbols", "can you make a strong password?"],
)

second(
    "dice",
    slots={"n": Integer(2, 6), "sides": F.Pick([4, 6, 8, 10, 12, 20], words_p=0)},
    variants=[
        V("roll_dice", "Roll dice.", P("count", "integer", "n"), P("sides", "integer", "sides")),
        V("random.dice", "Roll some dice and add them up.", P("dice", "integer", "n", req=True),
          P("faces", "integer", "sides")),
        V("rollDie", "Rolls one die.", P("sides", "integer", "sides", req=True)),
    ],
    imp=["roll {n} dice", "roll a {sides}-sided die", "roll {n} {sides}-sided dice", "roll the dice", "throw {n} dice"],
    other=["can you roll {n} dice for me?", "I need a d{sides} roll"],
)

second(
    "expense", near=("payment", "bill_pay"),
    slots={"amount": Amount(1, 900), "cat": Word(SPENDING), "what": kept(EXPENSE_NOTES, expense_note)},
    variants=[
        V("add_expense", "Add an expense.", P("amount", "number", "amount", req=True),
          P("category", "string", "cat", enum=SPENDING)),
        V("expenses.add", "Add a spending entry.", P("amount", "number", "amount", req=True), P("note", "string", "what")),
        V("noteSpending", "Notes money spent.", P("sum", "number", "amount", req=True), P("category", "string", "cat")),
    ],
    imp=["add an expense of {amount} for {cat}", "add {amount} to my {cat} spending", "note down {amount} spent on {what}",
         "put {amount} under {cat}"],
    other=["I spent {amount} on {cat} today, add it", "can you add an expense of {amount} for {what}?"],
)

second(
    "sun_times", near=("weather", "world_clock"),
    slots={"city": CITIES, "day": DAY},
    variants=[
        V("get_sun_times", "Sunrise and sunset for a city.", P("city", "string", "city", req=True),
          P("date", "string", "day")),
        V("sun.rise_set", "When the sun rises and sets.", P("location", "string", "city", req=True)),
        V("getDaylight", "Gets sunrise and sunset times in a place.", P("place", "string", "city", req=True),
          P("day", "string", "day")),
    ],
    imp=["get the sunrise time in {city}", "show sunrise and sunset for {city} {day}", "check when the sun sets in {city}",
         "find the sunset time in {city} {day}"],
    other=["when does the sun rise in {city}?", "what time is sunset in {city} {day}?"],
)

second(
    "print_document",
    slots={"file": kept(FILES, file_name), "copies": Integer(2, 20),
           "color": Flag({"": (["in colour", "in color"], ["in black and white"])})},
    variants=[
        V("print_document", "Print a document.", P("file", "string", "file", req=True), P("copies", "integer", "copies")),
        V("printer.print", "Send a file to the printer.", P("filename", "string", "file", req=True),
          P("color", "boolean", "color"), P("copies", "integer", "copies")),
        V("printFile", "Prints a file.", P("path", "string", "file", req=True), P("numCopies", "integer", "copies")),
    ],
    imp=["print {file}", "print {copies} copies of {file}", "print {file} {color}", "send {file} to the printer"],
    other=["can you print {file} for me?", "I need {copies} copies of {file} printed"],
)

second(
    "screen_brightness", near=("lights",),
    slots={"pct": PCT},
    variants=[
        V("set_screen_brightness", "Set the display brightness.",
          P("level", "integer", "pct", req=True, minimum=0, maximum=100)),
        V("display.brightness", "Screen brightness in percent.", P("percent", "integer", "pct", req=True)),
        V("setDisplayLevel", "Sets how bright the screen is.", P("value", "integer", "pct", req=True)),
    ],
    imp=["set the screen brightness to {pct}", "dim my screen to {pct}", "turn the display brightness to {pct}",
         "make the screen {pct} bright"],
    other=["screen brightness {pct} please", "can you put my display at {pct}?"],
)

second(
    "ringer_mode", near=("volume", "do_not_disturb"),
    slots={"mode": Word(RINGER_MODES)},
    variants=[
        V("set_ringer_mode", "Set the phone's ringer mode.", P("mode", "string", "mode", req=True, enum=RINGER_MODES)),
        V("phone.ringer", "Ring, vibrate or silent.",
          P("setting", "string", "mode", req=True, enum=[m.upper() for m in RINGER_MODES])),
        V("setSoundProfile", "Sets the sound profile.", P("profile", "string", "mode", req=True)),
    ],
    imp=["put my phone on {mode}", "switch the ringer to {mode}", "set my phone to {mode} mode", "change the ringer to {mode}"],
    other=["phone on {mode} please", "can you put the phone on {mode}?"],
)

second(
    "find_file", conflicts=("web_search",),
    slots={"q": kept(FILE_QUERIES, file_query), "folder": Word(FOLDERS)},
    variants=[
        V("search_files", "Search files on this device.", P("query", "string", "q", req=True)),
        V("files.find", "Find a file by name.", P("name", "string", "q", req=True), P("folder", "string", "folder")),
        V("locateFile", "Locates a file.", P("filename", "string", "q", req=True)),
    ],
    imp=["find the file {q}", "search my files for {q}", "look for the {q} file", "find {q} in {folder}"],
    other=["where did I save {q}?", "can you find {q} on my computer?"],
)

second(
    "flight_checkin", near=("flights",),
    slots={"code": Built(booking_code), "seat": Word(["window", "aisle"])},
    variants=[
        V("check_in_flight", "Check in for a flight.", P("booking_reference", "string", "code", req=True),
          P("seat", "string", "seat", enum=["window", "aisle"])),
        V("airline.checkin", "Online check-in.", P("confirmation", "string", "code", req=True)),
        V("checkInPassenger", "Checks a passenger in.", P("bookingCode", "string", "code", req=True),
          P("seatPreference", "string", "seat")),
    ],
    imp=["check me in for booking {code}", "check in for my flight, reference {code}",
         "check in booking {code} with a {seat} seat", "do the online check-in for {code}"],
    other=["can you check me in? my booking is {code}", "check-in for {code}, {seat} seat if possible"],
)

second(
    "send_flowers",
    slots={"person": PERSON, "kind": Word(BOUQUETS), "day": DAY},
    variants=[
        V("send_flowers", "Send a bouquet.", P("recipient", "string", "person", req=True),
          P("flowers", "string", "kind", enum=BOUQUETS)),
        V("florist.order", "Order flowers for delivery.", P("to", "string", "person", req=True),
          P("bouquet", "string", "kind", req=True), P("delivery_date", "string", "day")),
        V("orderBouquet", "Orders a bouquet.", P("recipientName", "string", "person", req=True),
          P("deliverOn", "string", "day")),
    ],
    imp=["send {kind} to {person}", "send {person} some flowers", "order {kind} for {person} {day}",
         "have flowers delivered to {person} {day}"],
    other=["can you send {person} {kind}?", "I'd like {kind} delivered to {person} {day}"],
)

second(
    "tip_calculator", near=("payment",), conflicts=("calculator",),
    slots={"bill": Amount(5, 500), "pct": Integer(10, 25, fmt="{}%"), "people": Integer(2, 8)},
    variants=[
        V("calculate_tip", "Work out a tip.", P("bill", "number", "bill", req=True), P("percent", "integer", "pct")),
        V("tips.per_person", "A tip, and each person's part of the bill.", P("total", "number", "bill", req=True),
          P("tip_percent", "integer", "pct", req=True), P("people", "integer", "people")),
        V("computeTip", "Computes a tip amount.", P("amount", "number", "bill", req=True), P("rate", "integer", "pct", req=True)),
    ],
    imp=["work out a {pct} tip on {bill}", "calculate the tip on {bill}", "split {bill} between {people} with a {pct} tip",
         "tip {pct} on a bill of {bill}"],
    other=["what's a {pct} tip on {bill}?", "how much should I tip on {bill}?"],
)

second(
    "traffic", near=("navigation",),
    slots={"place": PLACES, "road": kept(ROADS, road_name)},
    variants=[
        V("get_traffic", "Traffic on the way to a place.", P("destination", "string", "place", req=True)),
        V("traffic.conditions", "Traffic on a road.", P("road", "string", "road", req=True)),
        V("checkCommute", "Checks commute traffic.", P("to", "string", "place", req=True)),
    ],
    imp=["check the traffic to {place}", "show traffic on {road}", "check traffic on my way to {place}",
         "get the traffic on {road}"],
    other=["how's the traffic on {road}?", "is there traffic on the way to {place}?"],
)

second(
    "days_until", near=("calendar_event", "reminder"),
    slots={"ev": kept(OCCASIONS, occasion_name), "date": Built(calendar_date)},
    variants=[
        V("days_until", "Count the days until an occasion.", P("occasion", "string", "ev", req=True)),
        V("countdown.create", "Start a countdown to an event.", P("name", "string", "ev", req=True),
          P("date", "string", "date")),
        V("daysLeft", "Days left until an event.", P("event", "string", "ev", req=True)),
    ],
    imp=["count the days until {ev}", "start a countdown to {ev} on {date}", "set a countdown for {ev}",
         "show the days left until {ev}"],
    other=["how many days until {ev}?", "how long until {ev}?"],
)

second(
    "lyrics", near=("music_play",),
    slots={"song": F.BY_NAME["music_play"].slots["song"], "artist": F.BY_NAME["music_play"].slots["artist"]},
    variants=[
        V("get_lyrics", "Lyrics of a song.", P("song", "string", "song", req=True), P("artist", "string", "artist")),
        V("lyrics.search", "Find song lyrics.", P("title", "string", "song", req=True)),
        V("showLyrics", "Shows the words of a song.", P("track", "string", "song", req=True), P("by", "string", "artist")),
    ],
    imp=["show the lyrics of {song}", "get the lyrics for {song} by {artist}", "find the words to {song}",
         "pull up the lyrics to {song}"],
    other=["what are the lyrics to {song}?", "how does {song} by {artist} go?"],
)

second(
    "radio", near=("music_play", "volume"),
    slots={"station": kept(STATIONS, station_name)},
    variants=[
        V("play_radio", "Play a radio station.", P("station", "string", "station", req=True)),
        V("radio.listen", "Listen to a radio station.", P("station_name", "string", "station", req=True)),
        V("streamStation", "Streams an internet radio station.", P("name", "string", "station", req=True)),
    ],
    imp=["play {station} on the radio", "tune in to {station}", "put the radio on {station}", "stream {station}"],
    other=["I want to listen to {station}", "can you put {station} on?"],
)

# --- the third 25 (data.py --third-families) --------------------------------------------------------
# Drawn only with --third-families, as a share of the extra-family requests, so that the data made
# with --second-families is what it was before they existed, byte for byte.

THIRD_FAMILIES = []
third = declarer(THIRD_FAMILIES)

START = Flag({"": (["start"], ["stop"])})  # a switch written "start" or "stop" (the stopwatch)
WASH_PROGRAMS = ["cotton", "wool", "delicates", "synthetics", "quick wash"]
MEDITATIONS = ["breathing", "body scan", "sleep", "focus"]
SOUNDS = ["rain", "ocean waves", "white noise", "thunderstorm", "forest", "brown noise"]
DOORS = ["front door", "back door", "side gate", "driveway"]
SCENES = ["movie night", "good morning", "dinner", "reading", "party", "bedtime"]
BEACHES = W.words("Brighton|Bondi|Santa Monica|Whitby|Cannon Beach|St Ives|Malibu|Newquay|Cape May|Biarritz")
BINS = ["recycling", "rubbish", "garden waste", "compost", "glass"]
LOTTERIES = W.words("Powerball|EuroMillions|Mega Millions|Lotto|Thunderball|SuperEnalotto")
ACCOUNTS = ["checking", "savings", "credit card", "joint"]
MEDICINES = W.words("""
lisinopril|metformin|atorvastatin|amoxicillin|levothyroxine|my inhaler|my allergy tablets|omeprazole|
sertraline|my blood pressure pills
""")
PICTURES = W.words("""
the beach photo|the mountain picture|my dog photo|the sunset picture|the family photo|the city skyline|
the forest picture|the northern lights photo
""")


def beach_name(rng, lex):
    return f"{S.cap(lex.word(rng))} {pick(rng, ('Beach', 'Bay', 'Cove', 'Sands'))}"


def lottery_name(rng, lex):
    return f"{S.cap(lex.word(rng))} {pick(rng, ('Lotto', 'Millions', 'Jackpot'))}"


def medicine_name(rng, lex):
    return f"my {lex.word(rng)} {pick(rng, ('tablets', 'pills', 'capsules'))}"


def picture_name(rng, lex):
    return f"the {lex.word(rng)} {pick(rng, ('photo', 'picture'))}"


third(
    "air_fryer", near=("timer",),
    slots={"temp": Integer(150, 220, words_p=0), "dur": Duration({"minute": (5, 40)}, {"hour": (1, 1)})},
    variants=[
        V("start_air_fryer", "Start the air fryer.", P("temperature", "integer", "temp", req=True, minimum=80, maximum=230),
          P("minutes", "integer", "dur", conv="dur_m")),
        V("fryer.cook", "Cook in the air fryer.", P("celsius", "integer", "temp", req=True),
          P("cook_minutes", "integer", "dur", req=True, conv="dur_m")),
        V("runAirFryer", "Runs the air fryer.", P("degrees", "integer", "temp"), P("timeMinutes", "integer", "dur", conv="dur_m")),
    ],
    imp=["set the air fryer to {temp} degrees for {dur}", "start the air fryer at {temp} degrees",
         "run the air fryer for {dur} at {temp}", "air fry at {temp} degrees for {dur}"],
    other=["can you start the air fryer at {temp} for {dur}?", "air fryer on {temp} degrees please"],
)

third(
    "washing_machine", near=("dishwasher",),
    slots={"prog": Word(WASH_PROGRAMS), "temp": F.Pick([30, 40, 60, 90], words_p=0)},
    variants=[
        V("start_washing_machine", "Start a wash.", P("program", "string", "prog", req=True, enum=WASH_PROGRAMS)),
        V("laundry.start_cycle", "Run the washing machine.", P("cycle", "string", "prog", req=True),
          P("temperature", "integer", "temp")),
        V("runWasher", "Runs the washer.", P("mode", "string", "prog"), P("degrees", "integer", "temp")),
    ],
    imp=["start a {prog} wash", "run the washing machine on {prog}", "start the washer on {prog} at {temp} degrees",
         "put the laundry on a {prog} cycle"],
    other=["can you start the washing machine on {prog}?", "wash on {prog} at {temp} please"],
)

third(
    "stopwatch", near=("timer",),
    slots={"run": START},
    variants=[
        V("set_stopwatch", "Start or stop the stopwatch.", P("running", "boolean", "run", req=True)),
        V("stopwatch.control", "Control the stopwatch.",
          P("action", "string", "run", req=True, enum=["start", "stop"], conv="flag_enum")),
        V("toggleStopwatch", "Starts or stops the stopwatch.", P("run", "boolean", "run", req=True)),
    ],
    imp=["{run} the stopwatch", "{run} my stopwatch", "{run} the stopwatch now", "please {run} the stopwatch"],
    other=["can you {run} the stopwatch?", "{run} the stopwatch for me"],
)

third(
    "snooze", near=("alarm", "timer"),
    slots={"dur": Duration({"minute": (1, 30)}, {"hour": (1, 1)})},
    variants=[
        V("snooze_alarm", "Snooze the ringing alarm.", P("minutes", "integer", "dur", conv="dur_m")),
        V("alarm.snooze", "Snooze the alarm for a while.", P("duration_minutes", "integer", "dur", req=True, conv="dur_m")),
        V("snoozeAlarm", "Snoozes the alarm.", P("snoozeMinutes", "integer", "dur", conv="dur_m")),
    ],
    imp=["snooze the alarm for {dur}", "snooze for {dur}", "snooze my alarm", "hit snooze for {dur}"],
    other=["can you snooze the alarm for {dur}?", "{dur} more, snooze it"],
)

third(
    "meditation", near=("timer", "sleep_sounds"),
    slots={"dur": Duration({"minute": (3, 60)}, {"hour": (1, 1)}), "kind": Word(MEDITATIONS)},
    variants=[
        V("start_meditation", "Start a guided meditation.", P("minutes", "integer", "dur", conv="dur_m"),
          P("type", "string", "kind", enum=MEDITATIONS)),
        V("mindfulness.session", "A mindfulness session.", P("duration_minutes", "integer", "dur", req=True, conv="dur_m"),
          P("style", "string", "kind")),
        V("beginMeditation", "Begins a meditation.", P("lengthMinutes", "integer", "dur", conv="dur_m")),
    ],
    imp=["start a {dur} meditation", "start a {kind} meditation", "begin a {kind} meditation for {dur}",
         "guide me through a {dur} meditation"],
    other=["I'd like to meditate for {dur}", "can we do a {kind} meditation?"],
)

third(
    "sleep_sounds", near=("music_play", "radio"),
    slots={"sound": Word(SOUNDS), "dur": Duration({"minute": (10, 120)}, {"hour": (1, 8)})},
    variants=[
        V("play_sleep_sounds", "Play a sound to fall asleep to.", P("sound", "string", "sound", req=True, enum=SOUNDS),
          P("minutes", "integer", "dur", conv="dur_m")),
        V("ambient.play", "Play ambient noise.", P("noise", "string", "sound", req=True),
          P("duration_minutes", "integer", "dur", conv="dur_m")),
        V("startSoundscape", "Starts a soundscape.", P("soundscape", "string", "sound", req=True)),
    ],
    imp=["play {sound} sounds", "play {sound} for {dur}", "put on {sound} to fall asleep to",
         "start the {sound} sounds for {dur}"],
    other=["I can't sleep, can you play some {sound}?", "{sound} sounds for {dur} please"],
)

third(
    "airplane_mode", near=("wifi", "bluetooth"),
    slots={"power": POWER},
    variants=[
        V("set_airplane_mode", "Turn airplane mode on or off.", P("enabled", "boolean", "power", req=True)),
        V("airplane_mode.toggle", "Switch airplane mode.",
          P("state", "string", "power", req=True, enum=["on", "off"], conv="flag_enum")),
        V("setAirplaneMode", "Sets airplane mode.", P("on", "boolean", "power", req=True)),
    ],
    imp=["turn {power} airplane mode", "switch airplane mode {power}", "{power:en} airplane mode",
         "turn airplane mode {power} on my phone"],
    other=["can you switch airplane mode {power}?", "airplane mode {power} please"],
)

third(
    "hotspot", near=("wifi",),
    slots={"power": POWER},
    variants=[
        V("set_hotspot", "Turn the mobile hotspot on or off.", P("enabled", "boolean", "power", req=True)),
        V("hotspot.toggle", "Switch the personal hotspot.",
          P("state", "string", "power", req=True, enum=["ON", "OFF"], conv="flag_enum")),
        V("setTethering", "Switches tethering.", P("active", "boolean", "power", req=True)),
    ],
    imp=["turn {power} the hotspot", "{power:en} the mobile hotspot", "switch tethering {power}",
         "turn the personal hotspot {power}"],
    other=["can you turn my hotspot {power}?", "hotspot {power}, thanks"],
)

third(
    "screenshot", near=("camera",),
    slots={"delay": Integer(2, 10), "area": Word(["window", "full screen"])},
    variants=[
        V("take_screenshot", "Take a screenshot.", P("delay_seconds", "integer", "delay")),
        V("screen.capture", "Capture the screen.", P("delay", "integer", "delay"),
          P("area", "string", "area", enum=["window", "full screen"])),
        V("grabScreen", "Grabs an image of the screen.", P("waitSeconds", "integer", "delay")),
    ],
    imp=["take a screenshot", "take a screenshot in {delay} seconds", "capture the {area}",
         "grab a screenshot of the {area}"],
    other=["can you screenshot this?", "screenshot in {delay} seconds please"],
)

third(
    "humidifier", near=("thermostat",),
    slots={"level": Integer(30, 70, fmt="{}%"), "room": ROOMS, "power": POWER},
    variants=[
        V("set_humidifier", "Set the humidifier's target humidity.",
          P("humidity", "integer", "level", req=True, minimum=30, maximum=70), P("room", "string", "room")),
        V("humidifier.power", "Turn a humidifier on or off.", P("on", "boolean", "power", req=True),
          P("room", "string", "room")),
        V("adjustHumidity", "Adjusts the humidity.", P("targetPercent", "integer", "level", req=True)),
    ],
    imp=["set the humidifier to {level}", "turn {power} the humidifier in the {room}", "set the {room} humidity to {level}",
         "{power:en} the humidifier"],
    other=["can you turn the humidifier {power}?", "humidity in the {room} at {level} please"],
)

third(
    "doorbell", near=("camera", "door_lock"),
    slots={"door": Word(DOORS)},
    variants=[
        V("show_doorbell_camera", "Show the doorbell camera.", P("door", "string", "door", enum=DOORS)),
        V("doorbell.live_view", "Live view from a door camera.", P("location", "string", "door", req=True)),
        V("viewEntrance", "Shows who is at an entrance.", P("entrance", "string", "door", req=True)),
    ],
    imp=["show the {door} camera", "show me who's at the {door}", "open the doorbell camera at the {door}",
         "pull up the {door} doorbell"],
    other=["who's at the {door}?", "can I see the {door}?"],
)

third(
    "home_scene", near=("lights",),
    slots={"scene": Word(SCENES)},
    variants=[
        V("activate_scene", "Activate a home scene.", P("scene", "string", "scene", req=True, enum=SCENES)),
        V("scenes.run", "Run a smart home scene.", P("name", "string", "scene", req=True)),
        V("setHomeScene", "Sets the house to a scene.", P("sceneName", "string", "scene", req=True)),
    ],
    imp=["activate the {scene} scene", "set the house to {scene}", "switch the home to {scene} mode",
         "run the {scene} scene"],
    other=["can you set up {scene} in the house?", "{scene} scene please"],
)

third(
    "car_rental", near=("ride", "flights"),
    slots={"city": CITIES, "day": DAY, "days": Integer(2, 14)},
    variants=[
        V("hire_car", "Hire a rental car.", P("city", "string", "city", req=True), P("pickup_date", "string", "day"),
          P("days", "integer", "days")),
        V("car_rental.reserve", "Reserve a rental car.", P("location", "string", "city", req=True),
          P("pickup", "string", "day", req=True)),
        V("bookRentalCar", "Books a rental car.", P("pickupCity", "string", "city", req=True),
          P("rentalDays", "integer", "days")),
    ],
    imp=["rent a car in {city} {day}", "book a rental car in {city} for {days} days", "reserve a car in {city} {day}",
         "get me a rental car in {city}"],
    other=["I need a hire car in {city} {day}", "can you rent me a car in {city} for {days} days?"],
)

third(
    "tide_times", near=("weather", "sun_times"),
    slots={"beach": kept(BEACHES, beach_name), "day": DAY},
    variants=[
        V("get_tide_times", "High and low tide times.", P("location", "string", "beach", req=True), P("date", "string", "day")),
        V("tides.forecast", "Tide forecast for a beach.", P("beach", "string", "beach", req=True)),
        V("checkTides", "Checks the tides.", P("place", "string", "beach", req=True), P("day", "string", "day")),
    ],
    imp=["check the tide times at {beach}", "get the tides for {beach} {day}", "show high tide at {beach}",
         "find low tide at {beach} {day}"],
    other=["when is high tide at {beach}?", "what are the tides at {beach} {day}?"],
)

third(
    "bin_day", near=("calendar_event", "reminder"),
    slots={"bin": Word(BINS)},
    variants=[
        V("get_collection_day", "When a bin is next collected.", P("bin_type", "string", "bin", enum=BINS)),
        V("waste.next_pickup", "The next waste pickup.", P("kind", "string", "bin", req=True)),
        V("binDay", "Gets the bin collection day.", P("stream", "string", "bin", req=True)),
    ],
    imp=["check when the {bin} gets collected", "show the next {bin} collection", "find the {bin} pickup day",
         "look up the {bin} collection day"],
    other=["when is {bin} day?", "which day do they take the {bin}?"],
)

third(
    "lottery",
    slots={"game": kept(LOTTERIES, lottery_name)},
    variants=[
        V("get_lottery_results", "Latest lottery results.", P("game", "string", "game", req=True)),
        V("lottery.results", "Winning numbers of a draw.", P("draw", "string", "game", req=True)),
        V("checkLotteryNumbers", "Checks lottery numbers.", P("lottery", "string", "game", req=True)),
    ],
    imp=["check the {game} results", "show the latest {game} numbers", "get last night's {game} numbers",
         "look up the {game} draw"],
    other=["what were the {game} numbers?", "did anyone win the {game}?"],
)

third(
    "bank_balance", near=("payment", "bill_pay", "expense"),
    slots={"account": Word(ACCOUNTS)},
    variants=[
        V("get_account_total", "How much money is in a bank account.", P("account", "string", "account", enum=ACCOUNTS)),
        V("bank.account_summary", "What a bank account holds.", P("account_type", "string", "account", req=True)),
        V("checkFunds", "Checks the funds in an account.", P("accountName", "string", "account", req=True)),
    ],
    imp=["check my {account} balance", "show the balance of my {account} account", "get my {account} account balance",
         "look up what's in my {account} account"],
    other=["how much is in my {account} account?", "what's my {account} balance?"],
)

third(
    "money_transfer", near=("payment", "bank_balance"),
    slots={"amount": Amount(10, 5000), "src": Word(ACCOUNTS), "dst": Word(ACCOUNTS)},
    joint=F._distinct("src", "dst"),
    variants=[
        V("transfer_money", "Move money between your accounts.", P("amount", "number", "amount", req=True),
          P("from_account", "string", "src", req=True), P("to_account", "string", "dst", req=True)),
        V("bank.transfer", "Transfer between accounts.", P("amount", "number", "amount", req=True),
          P("source", "string", "src"), P("destination", "string", "dst", req=True)),
        V("moveFunds", "Moves funds to an account.", P("sum", "number", "amount", req=True),
          P("toAccount", "string", "dst", req=True)),
    ],
    imp=["transfer {amount} from {src} to {dst}", "move {amount} from my {src} account to {dst}",
         "move {amount} into my {dst} account", "put {amount} from {src} into {dst}"],
    other=["can you move {amount} from {src} to {dst}?", "I want {amount} moved from {src} into {dst}"],
)

third(
    "join_meeting", near=("phone_call", "calendar_event"),
    slots={"time": TIME},
    variants=[
        V("join_meeting", "Join a video meeting.", P("start_time", "string", "time", req=True)),
        V("meetings.join", "Join an online meeting.", P("time", "string", "time", req=True)),
        V("enterVideoCall", "Enters a video call.", P("meetingTime", "string", "time", req=True)),
    ],
    imp=["join my {time} meeting", "join the {time} call", "get me into the {time} meeting", "dial into the {time} meeting"],
    other=["can you join my {time} meeting for me?", "I'm late for the {time} call, join it"],
)

third(
    "synonyms", near=("dictionary", "translate"),
    slots={"term": kept(TERMS, one_word)},
    variants=[
        V("find_synonyms", "Words that mean the same.", P("word", "string", "term", req=True)),
        V("thesaurus.lookup", "Thesaurus entry for a word.", P("term", "string", "term", req=True)),
        V("getSimilarWords", "Gets words similar in meaning.", P("word", "string", "term", req=True)),
    ],
    imp=["find a synonym for {term}", "give me another word for {term}", "look up {term} in the thesaurus",
         "show synonyms of {term}"],
    other=["what's another word for {term}?", "any synonyms for {term}?"],
)

third(
    "pronunciation", near=("dictionary", "translate", "synonyms"),
    slots={"term": kept(TERMS, one_word)},
    variants=[
        V("pronounce_word", "Say a word aloud.", P("word", "string", "term", req=True)),
        V("speech.pronounce", "Pronounce a word.", P("text", "string", "term", req=True)),
        V("sayAloud", "Says a word out loud.", P("word", "string", "term", req=True)),
    ],
    imp=["pronounce {term}", "say {term} out loud", "play the pronunciation of {term}", "read {term} aloud"],
    other=["how do you pronounce {term}?", "how is {term} said?"],
)

third(
    "charging_station", near=("navigation", "parking"),
    slots={"place": PLACES},
    variants=[
        V("find_charging_station", "Find an EV charging station.", P("near", "string", "place", req=True)),
        V("ev.chargers", "Electric car chargers near a place.", P("location", "string", "place", req=True)),
        V("locateCharger", "Locates a charger.", P("around", "string", "place", req=True)),
    ],
    imp=["find a charging station near {place}", "find an EV charger near {place}", "show chargers near {place}",
         "look for a car charger close to {place}"],
    other=["where can I charge the car near {place}?", "any chargers around {place}?"],
)

third(
    "concert_tickets", near=("movie_tickets", "music_play"),
    slots={"artist": F.BY_NAME["music_play"].slots["artist"], "city": CITIES, "count": Integer(2, 6)},
    variants=[
        V("buy_concert_tickets", "Buy tickets for a concert.", P("artist", "string", "artist", req=True),
          P("quantity", "integer", "count")),
        V("concerts.tickets", "Concert tickets for a performer.", P("performer", "string", "artist", req=True),
          P("city", "string", "city")),
        V("findGigTickets", "Finds gig tickets.", P("act", "string", "artist", req=True), P("city", "string", "city")),
    ],
    imp=["get {count} tickets to see {artist}", "buy tickets for {artist} in {city}", "find concert tickets for {artist}",
         "book {count} tickets for the {artist} concert"],
    other=["is {artist} playing in {city}? get me tickets", "can I get {count} tickets for {artist}?"],
)

third(
    "prescription_refill",
    slots={"med": kept(MEDICINES, medicine_name)},
    variants=[
        V("refill_prescription", "Request a prescription refill.", P("medication", "string", "med", req=True)),
        V("pharmacy.refill", "Refill a prescription at the pharmacy.", P("drug", "string", "med", req=True)),
        V("orderRefill", "Orders a medicine refill.", P("medicine", "string", "med", req=True)),
    ],
    imp=["refill my prescription for {med}", "order a refill of {med}", "request a refill for {med}",
         "reorder {med} from the pharmacy"],
    other=["I'm running low on {med}, can you refill it?", "can I get more {med}?"],
)

third(
    "wallpaper",
    slots={"pic": kept(PICTURES, picture_name), "where": Word(["home", "lock"])},
    variants=[
        V("set_wallpaper", "Set the phone's wallpaper.", P("image", "string", "pic", req=True)),
        V("wallpaper.change", "Change the wallpaper.", P("picture", "string", "pic", req=True),
          P("screen", "string", "where", enum=["home", "lock"])),
        V("changeBackground", "Changes the background image.", P("imageName", "string", "pic", req=True)),
    ],
    imp=["set my wallpaper to {pic}", "change the background to {pic}", "make {pic} my {where} screen wallpaper",
         "use {pic} as my wallpaper"],
    other=["can you make {pic} my wallpaper?", "I want {pic} as the {where} screen background"],
)

# --- indexes and checks -------------------------------------------------------------------------------

def every_extra():
    """The extra families of the three batches, in order (a new list at each call: a test adds a bad
    family to a batch for a while)."""
    return EXTRA_FAMILIES + SECOND_FAMILIES + THIRD_FAMILIES


EXTRA_BY_NAME = {f.name: f for f in every_extra()}


def tool_words(families):
    """Words of the families' names and tool names: no invented or renamed tool may take one."""
    out = set()
    for f in families:
        out.update(F.name_words(f.name))
        for v in f.variants:
            out.update(F.name_words(v.name))
    return out


# With --more-families, with --second-families for the second 25 as well, and with --third-families
# for the third.
EXTRA_WORDS = tool_words(EXTRA_FAMILIES) | set("""tv television channel wifi wireless bluetooth flashlight torch battery
vacuum sprinkler sprinklers irrigate coffee espresso feeder pet photo picture camera car engine contact
contacts movie cinema tickets parking park result dictionary definition calculate app status post appointment
clock review rate device library book bill invoice""".split())
SECOND_WORDS = tool_words(SECOND_FAMILIES) | set("""garage blind blinds shade shades fan ceiling dishwasher
security alarm delivery takeout bike bikes rail horoscope zodiac pollution aqi password dice die expense
spending sunrise sunset sun printer print screen display brightness ringer file files flight flights
flowers bouquet florist tip traffic commute countdown lyrics radio station""".split())
# (their request words that no tool name of theirs holds: the names' words come from tool_words)
THIRD_WORDS = tool_words(THIRD_FAMILIES) | set("fry meditate noise beach bins recycling jackpot synonym medicine".split())


def check():
    """No split-B word in the extra families' material, no clash with the invented tools' words, and
    no family or tool name that another family (of families.py or an extra one) already uses;
    raises with every offender."""
    invented = set(W.INVENTED_VERBS) | set(W.INVENTED_NOUNS)
    family_names = {g.name for g in F.FAMILIES}
    tool_names = {v.name for g in F.FAMILIES for v in g.variants}  # split B's included
    problems = []
    for f in every_extra():
        if f.name in family_names:
            problems.append(f"extra family {f.name}: the name is a family's already")
        family_names.add(f.name)
        texts = [t.text for t in f.templates] + [v.name for v in f.variants]
        texts += [d for v in f.variants for d in v.descs] + [p.name for v in f.variants for p in v.params]
        for kind in f.slots.values():
            texts += [str(x) for attr in ("train", "items") for x in getattr(kind, attr, [])]
        for text in texts:
            bad = F.words_in(text) & F.B_WORDS
            if bad:
                problems.append(f"extra family {f.name}: split-B word {sorted(bad)[0]!r} in {text!r}")
        for v in f.variants:
            if v.name in tool_names:
                problems.append(f"extra family {f.name}: tool {v.name} is a family's already")
            tool_names.add(v.name)
            clash = set(F.name_words(v.name)) & invented
            if clash:
                problems.append(f"extra family {f.name}: tool {v.name} uses the invented word {sorted(clash)[0]!r}")
    if problems:
        raise ValueError("more_families: " + "; ".join(problems))


check()

# Register them by name, and make relations symmetric: a base family gains the extra family's name
# in its near and conflict sets, which the generator only ever tests for membership against the
# families a split draws from, so the data made without --more-families does not change.
F.BY_NAME.update(EXTRA_BY_NAME)
for _f in every_extra():
    for _g in list(_f.near):
        F.BY_NAME[_g].near.add(_f.name)
    for _g in list(_f.conflicts):
        F.BY_NAME[_g].conflicts.add(_f.name)
