"""A third conversational-memory set, for reporting only: one person's sessions with their assistant over a year,
built by a generator unlike bench/data/memory.py and bench/data/memory2.py. Nothing in the project is chosen on it.

    python -m bench.data.memory3 [--seed 31] [--out DIR]     # writes the workspace and questions.jsonl to look at

One user talks to an agent about a dozen hobbies and chores (sourdough, a pottery course, cycling, Portuguese, a
choir, chess, money, a camper van, birdwatching, a home office, knitting, food-bank shifts). Every session is one
ReMe daily note, `daily/YYYY-MM-DD/<topic>.md`, written as ReMe's `daily_write` writes one: front matter (`name`,
`description`, `session_id`, `source_conversation`), a heading, then one section per turn (`### 09:14 user`, the
turn on the next line). A turn's text line is one chunk; the speaker is only in the heading, so no chunk carries a
name. Sessions are short (4-12 turns) and there are many: one to three topics on ~150 days between 2026-01-05 and
2026-11-20. The questions are in the first person ("What did I ..."), asked on 2026-11-24, and their wording is
written apart from the evidence's (the share of questions that share no content word with any evidence turn is
printed by `main`). Kinds:
  fact        one user turn; the assistant listed look-alike options in an earlier session of the same topic, and a
              friend's version of the same fact is said elsewhere
  update      a plan or arrangement stated, then changed in a later session ("moved practice to Thursdays"): both
              turns are evidence
  multi-hop   two user turns on days at least ten days apart, joined by a name, a venue or a thing: "I lent my
              tripod to Zofia" ... "Zofia is moving to Ghent"; asked "Where is the friend who borrowed my tripod
              moving to?" (the question names neither the friend nor the city)
  relative    "What did I bake the week after the Dolomites trip?": one anchor event, the asked activity on the day
              the offset names (after or before), and look-alikes of the same activity on other days; evidence:
              the asked turn
  period      "Which plant did I repot in the autumn?": the same activity once in each season; evidence: that
              season's turn
No data is fetched; the same seed always gives the same notes and questions.
"""

from __future__ import annotations

import datetime as dt
import random
import re

from bench.data.conversations import MONTHS, MemorySet, arguments, write_out

SEED = 31
SPAN = (dt.date(2026, 1, 5), dt.date(2026, 11, 20))
TODAY = dt.date(2026, 11, 24)  # when the questions are asked

TOPICS = {  # slug: (description, what the user says in passing, what the assistant says in passing)
    "sourdough": ("Sourdough: starter, flour and bakes", [
        "The dough was slack again, like a puddle on the counter.", "Is it normal for the top to crack like that?",
        "I left it to prove overnight in the fridge.", "The kitchen is freezing this week, nothing rises.",
        "My oven runs hot on the left side, I think."], [
        "A cooler kitchen just means a longer bulk ferment; go by the dough, not the clock.",
        "Try holding back ten percent of the water next time and adding it after the autolyse.",
        "A Dutch oven with the lid on for the first twenty minutes usually fixes a pale crust.",
        "If the starter doubles in four to six hours it is ready to use."]),
    "pottery": ("Pottery course and glazes", [
        "My centring is still wobbly, the clay keeps drifting off.", "Trimmed three bowls today, one survived.",
        "The teacher says I press too hard with my left hand.", "My hands smell of clay for days."], [
        "Keep your elbows braced on your thighs while centring; it steadies the clay.",
        "Leather-hard is the right moment for trimming.",
        "Glaze results vary with kiln position, so test tiles are worth the effort.",
        "Wedge the clay a little longer to get the air out."]),
    "cycling": ("Bike, commute and rides", [
        "Got caught in the rain on the way home, soaked through.", "The chain is making a clicking noise again.",
        "Headwind the whole way this morning.", "Someone parked across the bike lane again."], [
        "A clicking chain often just needs cleaning and a drop of lube on each link.",
        "Mudguards make a big difference for commuting in the wet.",
        "Check the tyre pressure weekly; commuting tyres lose air slowly.",
        "Lights front and back are worth having even in daylight on busy roads."]),
    "portuguese": ("Learning Portuguese", [
        "The nasal vowels are killing me.", "Did forty minutes of listening on the bus.",
        "I keep mixing up ser and estar.", "My streak on the app is still alive."], [
        "Shadowing short audio clips helps with the nasal sounds.",
        "Try writing five sentences a day about what you did; it makes the past tenses stick.",
        "Spaced repetition works best with short daily sessions.",
        "Podcasts for learners are a good bridge to native speed."]),
    "choir": ("Choir: rehearsals and concerts", [
        "My voice was gone by the end of rehearsal.", "The conductor made us sing the opening eight times.",
        "I still come in late on the second page.", "Sight-reading went better than I feared."], [
        "Warm up gently before rehearsal and drink water during the break.",
        "Marking your entries in pencil helps with the late ones.",
        "Recording the rehearsal on your phone is useful for practice at home.",
        "Breathing from the diaphragm will help the long phrases."]),
    "chess": ("Chess club and study", [
        "Blundered a knight in a winning position, again.", "Did twenty puzzles before breakfast.",
        "The club was packed tonight.", "I always get into time trouble in the middlegame."], [
        "Before each move, check what the opponent's last move threatens.",
        "Endgame study pays off more than memorising openings at this level.",
        "Puzzles in short daily sets help pattern recognition.",
        "Try playing longer time controls to reduce time trouble."]),
    "money": ("Budget and savings", [
        "Went over budget on takeaways again.", "The energy bill was higher than I expected.",
        "I cancelled two subscriptions I never use.", "Payday can't come soon enough."], [
        "Tracking spending weekly rather than monthly makes overspending easier to catch.",
        "An emergency fund of three to six months of costs is a common target.",
        "Automating a transfer on payday keeps savings consistent.",
        "Reviewing subscriptions every quarter is a good habit."]),
    "van": ("Camper van conversion", [
        "Spent the whole day under the van, covered in rust flakes.", "The insulation is finally all in.",
        "The sliding door sticks when it's cold.", "I measured the cabinets three times and still cut one short."], [
        "Sound-deadening mats before insulation help a lot with road noise.",
        "Ventilation matters more than people think; a roof fan prevents condensation.",
        "Check the payload before adding heavy cabinets.",
        "A leisure battery with a battery-to-battery charger is a simple first setup."]),
    "birding": ("Birdwatching", [
        "Heard a woodpecker but never saw it.", "The hide was full of photographers with huge lenses.",
        "I'm getting better at the warblers.", "Freezing at the estuary this morning, worth it though."], [
        "Early mornings near water are usually the best time.",
        "A field guide app with song recordings helps with identification.",
        "Keeping a simple list of sightings makes the year more fun.",
        "Move slowly and stay in the shade; birds notice outlines."]),
    "office": ("Home office setup", [
        "My back hurts after a full day at the kitchen table.", "The video calls lag every afternoon.",
        "The study gets no light after three.", "I need a better chair, honestly."], [
        "Screen at eye level and elbows at ninety degrees is a good starting point.",
        "A wired connection is more reliable for calls than wifi.",
        "A daylight lamp can help in a dark room in winter.",
        "Stand up and walk for five minutes every hour."]),
    "knitting": ("Knitting projects", [
        "Dropped a stitch three rows back and didn't notice.", "My tension is all over the place.",
        "The yarn shop was having a sale.", "Frogged the whole sleeve, starting again."], [
        "A lifeline thread makes ripping back much less painful.",
        "Blocking evens out a lot of tension problems.",
        "Knitting a gauge swatch first saves a lot of frustration.",
        "Stitch markers help keep track of pattern repeats."]),
    "foodbank": ("Volunteering at the food bank", [
        "We packed over two hundred parcels today.", "The new volunteers were great.",
        "Ran out of tinned tomatoes again.", "My feet ache after standing all morning."], [
        "Comfortable shoes make a long shift much easier.",
        "It sounds like a rewarding morning.",
        "Donation drives before the holidays usually bring in a lot.",
        "Taking a short break halfway through helps."]),
}
USER_ANY = ["Thanks, that helps.", "Makes sense.", "Hmm, I'll think about it.", "Can you remind me next week?",
            "OK, one more question.", "Good point.", "Ha, fair.", "Let's pick this up tomorrow."]
ASSIST_ANY = ["Noted.", "Happy to help.", "That sounds like progress.", "Good luck with it.",
              "I'll keep that in mind for next time.", "Let me know how it goes."]
USER_LEAD = ["", "", "", "Quick one: ", "Also, ", "By the way, ", "Right, ", "Honestly, ", "So, ", "Update: "]
USER_TAIL = ["", "", "", " Anyway.", " Not sure why.", " Typical.", " Ugh.", " :)", " Long week.", " Again."]
ASSIST_LEAD = ["", "", "", "Sure. ", "Good question. ", "From what you describe, ", "In short: ", "One idea: ",
               "Understood. ", "If it helps, "]
ASSIST_TAIL = ["", "", "", " Want me to note that?", " I can look into it more.", " Shall I remind you later?",
               " Tell me how it goes."]
FRIENDS = ["Tove", "Idris", "Marisol", "Benedikt", "Aoife", "Kalani", "Ruairi", "Zofia", "Dmitri", "Nkechi", "Pilar",
           "Anselm", "Yusra", "Ewan", "Lotte", "Rashid", "Guadalupe", "Oskar", "Thandiwe", "Felipe", "Agnieszka",
           "Kenta", "Maren", "Cormac", "Halvard", "Soraya", "Jovan", "Imelda", "Tadhg", "Wanjiru"]
PRO_NAMES = ["Okafor", "Lindqvist", "Baptiste", "Moretti", "Haddad", "Nakamura", "Quist", "Fairweather"]

# single facts: (topic, statements (one is used), questions (one is used), values, a friend's version)
FACTS = [
    ("sourdough", ["Named the starter {v}, it lives on top of the fridge now."],
     ["What did I call my bread culture?", "What's the name I gave the jar of wild yeast?"],
     ["Clint Yeastwood", "Doughlores", "Gerald", "Bubbles", "Sir Loafalot"],
     "{f} calls her starter {v}, which is a better name honestly."),
    ("sourdough", ["Swapped to {v} flour for the last three loaves and the crumb is so much more open."],
     ["Which grain did I switch to for my bread?"], ["spelt", "rye", "einkorn", "emmer"],
     "{f} swears by {v} flour but I never liked the taste."),
    ("pottery", ["The course is Thursday nights at {v}, ten weeks, wheel only.",
                 "Signed up for ten Thursdays of wheel throwing at {v}."],
     ["Where do I take ceramics lessons?"], ["Mudlark Studio", "The Clay Loft", "Kiln & Co", "Fired Up Workshop"],
     "{f} did a handbuilding course at {v} years ago."),
    ("pottery", ["First glaze test came out {v}, nothing like the chart."],
     ["How did my first test tile look after firing?"], ["muddy brown", "speckled green", "a weird lilac", "bright orange"],
     "{f}'s mug came out {v}, hers was supposed to be like that."),
    ("cycling", ["Went for the {v} in the end, second hand, the previous owner barely rode it."],
     ["Which bicycle did I end up purchasing?"],
     ["Surly Long Haul Trucker", "Brompton C Line", "Genesis Croix de Fer", "Cannondale Topstone", "Kona Sutra"],
     "{f} rides a {v} and never stops talking about it."),
    ("cycling", ["Timed it today: {v} door to desk if I take the canal path."],
     ["How long is my ride to work?"], ["25 minutes", "40 minutes", "35 minutes", "50 minutes"],
     "{f} says her ride in takes {v}, but she lives further out."),
    ("portuguese", ["My tutor is {v}, she grew up in Coimbra and is very patient."],
     ["Who is teaching me the language?"], ["Joana", "Filipa", "Mariana", "Leonor"], None),
    ("portuguese", ["Passed the A2 exam, {v} out of 100!"],
     ["What score did I get on my language test?"], ["78", "84", "91", "88"], None),
    ("choir", ["They've put me in the {v} section for the spring programme."],
     ["Which voice part do I sing?"], ["second alto", "first tenor", "baritone", "second soprano"],
     "{f} moved to {v} this term, she has the range for it."),
    ("choir", ["We're learning {v} for the December concert."],
     ["What work are we rehearsing for the winter performance?"],
     ["Faure's Requiem", "Handel's Messiah", "Rutter's Gloria", "Vivaldi's Gloria"],
     "{f}'s choir did {v} last year, she said it was hard."),
    ("chess", ["The rapid tournament took my rating up to {v}."],
     ["What rating did the quick-play event get me to?"], ["1340", "1412", "1488", "1523"], None),
    ("chess", ["I've been playing the {v} as black and it really suits me."],
     ["Which defence do I use with the dark pieces?"],
     ["Caro-Kann", "Scandinavian", "French Defence", "Pirc"],
     "{f} keeps trying to get me to play the {v}."),
    ("money", ["Set the grocery budget at {v} a month, we'll see if it holds."],
     ["How much am I allowing myself for food shopping?"], ["320 euros", "280 euros", "350 euros", "300 euros"], None),
    ("money", ["Moved the emergency fund into a {v}, the interest is better."],
     ["Where is my rainy-day money kept?"],
     ["fixed-term deposit", "money market fund", "high-yield savings account", "government bond fund"],
     "{f} keeps her savings in a {v}."),
    ("van", ["The van is a {v}, high roof, and it already came with a bed."],
     ["What vehicle am I converting into a camper?"],
     ["2014 VW Transporter", "2011 Ford Transit", "Renault Trafic", "2016 Peugeot Boxer"],
     "{f} converted a {v} last year, it's lovely inside."),
    ("van", ["Fitted {v} of panels on the roof this weekend."],
     ["How much solar capacity did I install?"], ["200 watts", "300 watts", "400 watts", "175 watts"],
     "{f} has {v} of solar and still runs out in winter."),
    ("birding", ["A {v} at the reservoir this morning, my first ever!"],
     ["Which unusual bird did I spot down by the water?"], ["hoopoe", "bittern", "spoonbill", "golden oriole"],
     "{f} saw a {v} on the coast, I'm so jealous."),
    ("birding", ["Ordered the {v} binoculars in the end."],
     ["Which optics did I buy for watching wildlife?"],
     ["Nikon Monarch 8x42", "Vortex Diamondback 10x42", "Zeiss Terra 8x32", "Opticron Explorer"],
     "{f} lent me her {v} once, they were heavy."),
    ("office", ["The standing desk arrived, it's the {v}."],
     ["What desk did I get for working from home?"],
     ["Fully Jarvis", "FlexiSpot E7", "IKEA Bekant", "Autonomous SmartDesk"],
     "{f} has the {v} and the motor died after a year."),
    ("office", ["Painted the study {v}, it feels much calmer."],
     ["What colour are the walls of my work room?"], ["sage green", "dusky blue", "warm grey", "terracotta"],
     "{f} painted her hallway {v}, looks great."),
    ("knitting", ["Cast on a {v} for Dad's birthday."],
     ["What am I making as a present for my father?"],
     ["cable-knit jumper", "fair isle hat", "ribbed scarf", "pair of socks"],
     "{f} is knitting a {v} for her nephew."),
    ("foodbank", ["They've put me on {v} at the food bank."],
     ["What job do I do when I volunteer?"], ["sorting donations", "the delivery round", "the front desk",
                                             "stock rotation"], None),
    ("money", ["My landlord finally agreed to {v}, I can't believe it."],
     ["What did the person I rent from say yes to?"],
     ["replace the old boiler", "let me keep a cat", "freeze the rent for a year", "put in a shower"], None),
    ("office", ["Our new team lead is {v}, she came over from the Lyon office."],
     ["Who is my new manager at work?"], ["Henrietta Vogel", "Siobhan Clarke", "Margit Ekstrom", "Paola Ricci"],
     None),
    ("money", ["Booked {v} for Mum's 70th, a table for twelve."],
     ["Where is my mother's birthday dinner being held?"],
     ["Osteria Lupo", "The Green Room", "Casa Nuno", "Brasserie Hugo"], None),
    ("birding", ["The allergy test came back: {v}. Explains the spring walks."],
     ["What am I allergic to?"], ["birch pollen", "grass pollen", "dust mites", "hazel pollen"], None),
]
# updates: (topic, first statement, later statement, question, values)
UPDATES = [
    ("choir", "Rehearsals are on {a} evenings this term.", "The hall was double-booked, so practice moves to {b}s.",
     "Which evening do I have choir now?", ["Monday", "Tuesday", "Wednesday", "Thursday"]),
    ("foodbank", "Signed up for the {a} morning shift at the food bank.",
     "Swapped my volunteering slot to {b} afternoons, mornings were too much.",
     "When do I help out at the food bank these days?", ["Saturday", "Sunday", "Friday", "Wednesday"]),
    ("van", "Plan for August: take the van to {a}.", ("Scrapped the first plan, we're driving to {b} instead, "
                                                     "the ferry is cheaper."), "Where am I taking the camper this summer?",
     ["Brittany", "the Scottish Highlands", "the Black Forest", "Galicia"]),
    ("pottery", "I think the bowls will get a {a} glaze.", "Changed my mind about the bowls: {b} it is.",
     "What finish did I settle on for the bowls?", ["tenmoku", "celadon", "shino", "matte white"]),
    ("chess", "Club nights are {a}s at the library.", "The club has moved to {b}s, the library closes early now.",
     "Which night is chess club on at the moment?", ["Monday", "Tuesday", "Thursday", "Friday"]),
    ("money", "Staying with {a} for the phone contract, can't be bothered to switch.",
     "Ported my number to {b} yesterday, half the price.", "Which mobile provider am I with now?",
     ["Vodafone", "Three", "giffgaff", "O2"]),
    ("portuguese", "Lessons are {a} mornings before work.", "Moved my lessons to {b} evenings, mornings were brutal.",
     "When are my language lessons now?", ["Tuesday", "Wednesday", "Thursday", "Saturday"]),
    ("cycling", "The bike is booked in for a service at {a}.",
     "{a} cancelled on me, so the service is at {b} now.", "Which shop is servicing my bike?",
     ["Spokes & Co", "Chainline Cycles", "The Bike Doctor", "Freewheel"]),
    ("knitting", "Going to use {a} yarn for the blanket.", "Ditched the first yarn, the blanket will be {b}.",
     "What yarn is the blanket being made from?", ["merino", "alpaca", "cotton", "acrylic"]),
    ("office", "I'll keep working from home {a} days a week.",
     "New policy at work: it's {b} days at home now.", "How many days a week do I work from home at the moment?",
     ["three", "two", "four", "one"]),
]
# multi-hop: (first turn, second turn, question, values of the thing that joins them)
BRIDGES = [
    ("Lent my {thing} to {f} for the weekend.", "{f} just told me she's moving to {city} in the new year.",
     "Where is the friend who borrowed my {thing} moving to?",
     ["tripod", "pressure washer", "tile cutter", "drill", "projector", "gazebo"],
     ["Ghent", "Trieste", "Aarhus", "Bilbao", "Tampere", "Utrecht"]),
    ("Our {group} meets at {venue} from now on.", "{venue} is closing at the end of {month}, the landlord sold up.",
     "When does the place where my {group} gets together shut down?",
     ["board-game night", "knitting circle", "running club", "book swap", "quiz team", "sketching group"],
     ["the Crooked Spoon", "Bramble Cafe", "the Old Dairy", "Fox and Anchor", "Lantern Rooms", "Pilot Coffee"]),
    ("{f} put me onto her {pro}, {name}.", "Saw {name} today: {advice}",
     "What did the {pro} that {f} recommended tell me?",
     ["accountant", "mechanic", "electrician", "osteopath", "dentist", "optician"],
     ["I can claim the standing desk as a work expense.", "the clutch has maybe a year left in it.",
      "the wiring can take the new induction hob.", "my hip is tight from sitting, not injured.",
      "the filling can wait until spring.", "my eyes haven't changed since last time."]),
    ("Bought {gift} for {f}'s birthday, hope she likes it.", "{f}'s party is at {place} on Saturday.",
     "Where is the party for the person I bought {gift} for?",
     ["a ceramic teapot", "a bird feeder", "a yoga mat", "a vinyl record", "a cookbook", "a plant stand"],
     ["the bowling alley", "her allotment", "the rooftop terrace", "a karaoke bar", "the boathouse", "her parents'"]),
]
ANCHORS = [("the Dolomites trip", "Back from the Dolomites last night, legs destroyed but what views."),
           ("my birthday", "Turned 41 today, the team brought in a cake."),
           ("the charity ride", "Did the 100 km charity ride this morning, raised 640 euros!"),
           ("the Lyon conference", "Just landed from the conference in Lyon, my talk went fine."),
           ("the kitchen refit", "The fitters finished today, I finally have a sink again."),
           ("the spring concert", "The spring concert is over and nobody missed an entry.")]
ACTIVITIES = {  # family: (topic, turn, question verb phrase, values)
    "bake": ("sourdough", "Baked {v} this afternoon, half of it is gone already.", "What did I make in the oven",
             ["a rye loaf", "focaccia", "cinnamon buns", "a babka", "cardamom knots", "brioche", "banana bread",
              "pretzels", "a seeded batard", "hot cross buns"]),
    "film": ("office", "Watched {v} tonight, still thinking about it.", "Which movie did I see",
             ["Paris, Texas", "Stalker", "In the Mood for Love", "The Third Man", "Tampopo", "Aftersun", "Burning",
              "Rear Window", "Portrait of a Lady on Fire", "Ran"]),
    "buy": ("money", "Picked up {v} for the balcony.", "What did I get for outside",
            ["a lemon tree", "a bird bath", "a folding chair", "a herb planter", "string lights", "an olive tree",
             "a hammock", "a tomato grow bag", "a wind chime", "a small bench"]),
    "game": ("chess", "Played {v} with the neighbours, I lost badly.", "Which board game did we play",
             ["Wingspan", "Catan", "Azul", "Carcassonne", "Root", "Cascadia", "Ticket to Ride", "Patchwork",
              "Everdell", "Splendor"]),
}
OFFSETS = [(7, "the week after {a}"), (14, "two weeks after {a}"), (-3, "a few days before {a}"),
           (1, "the day after {a}"), (-7, "the week before {a}"), (10, "ten days after {a}"),
           (30, "a month after {a}"), (-14, "a fortnight before {a}")]
SEASONS = [("early in the year", (1, 2)), ("in the spring", (3, 5)), ("over the summer", (6, 8)),
           ("in the autumn", (9, 11))]
PERIODIC = [  # (topic, turn, question)
    ("office", "Repotted the {v}, the roots were circling the pot.", "Which plant did I give a bigger pot {s}?",
     ["monstera", "fiddle-leaf fig", "snake plant", "pothos"]),
    ("cycling", "Took the train out to {v} for the day and cycled back.", "Where did I go on a day trip {s}?",
     ["Whitstable", "Rye", "Lewes", "Margate"]),
    ("choir", "Saw {v} live last night, what a voice.", "Who did I watch in concert {s}?",
     ["Anoushka Shankar", "Rhiannon Giddens", "Jacob Collier", "Angelique Kidjo"]),
]
_STOP = ("a an the and or of to in on at for with from by is are was were be been am i me my we our you your it its "
          "this that what which who where when how did do does have has had now new there their her she he his "
          "them they as up into out so not no yes after before")
STOP = set(_STOP.split(" "))


class Diary:
    """The notes: date -> topic -> [[speaker, text, question ids]] (a session alternates user and assistant)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.notes: dict[dt.date, dict[str, list[list]]] = {}
        span = (SPAN[1] - SPAN[0]).days
        for d in sorted(rng.sample(range(span + 1), 150)):
            for topic in rng.sample(list(TOPICS), rng.choice([1, 1, 1, 2, 2, 3])):
                self.session(SPAN[0] + dt.timedelta(days=d), topic)

    def session(self, date: dt.date, topic: str) -> list[list]:
        """The session on `topic` of `date` (a new one of 4-12 turns when there is none)."""
        day = self.notes.setdefault(date, {})
        if topic not in day:
            user, assistant = TOPICS[topic][1], TOPICS[topic][2]
            turns = []
            for i in range(self.rng.randrange(4, 13)):
                if i % 2 == 0:
                    text = self.rng.choice(user if self.rng.random() < 0.6 else USER_ANY)
                    turns.append(["user", self.vary(text, USER_LEAD, USER_TAIL), []])
                else:
                    text = self.rng.choice(assistant if self.rng.random() < 0.7 else ASSIST_ANY)
                    turns.append(["assistant", self.vary(text, ASSIST_LEAD, ASSIST_TAIL), []])
            day[topic] = turns
        return day[topic]

    def vary(self, text: str, leads: list[str], tails: list[str]) -> str:
        """A filler line with a lead-in and a tail drawn (most are empty), so few filler turns repeat verbatim."""
        lead, tail = self.rng.choice(leads), self.rng.choice(tails)
        return f"{lead}{text[0].lower() if lead else text[0]}{text[1:]}{tail}"

    def say(self, date: dt.date, topic: str, text: str, qid: int | None = None, reply: str | None = None) -> None:
        """A user turn (and the assistant's reply) put between two exchanges of the session."""
        turns = self.session(date, topic)
        at = 2 * self.rng.randrange(len(turns) // 2 + 1)
        answer = reply or self.rng.choice(ASSIST_ANY + TOPICS[topic][2][:2])
        turns[at:at] = [["user", text, [qid] if qid is not None else []], ["assistant", answer, []]]

    def day(self, lo: dt.date = SPAN[0], hi: dt.date = SPAN[1], avoid: set | None = None) -> dt.date:
        """A date in [lo, hi] (one with notes, when there is one), not in `avoid`."""
        avoid = avoid or set()
        inside = [d for d in self.notes if lo <= d <= hi and d not in avoid]
        if inside and self.rng.random() < 0.8:
            return self.rng.choice(inside)
        while (d := lo + dt.timedelta(days=self.rng.randrange((hi - lo).days + 1))) in avoid:
            pass
        return d


def generate(seed: int = SEED) -> MemorySet:
    """The whole third set for a seed."""
    rng = random.Random(seed)
    diary = Diary(rng)
    friends = rng.sample(FRIENDS, len(FRIENDS))
    questions: list[dict] = []

    def ask(text: str, kind: str) -> int:
        questions.append({"id": len(questions) + 1, "question": text, "kind": kind, "evidence": []})
        return len(questions)

    for topic, statements, asks, values, other in FACTS:
        v, *rest = rng.sample(values, len(values))
        qid = ask(rng.choice(asks), "fact")
        when = diary.day(dt.date(2026, 2, 15), dt.date(2026, 10, 31))
        earlier = diary.day(SPAN[0], when - dt.timedelta(days=5))  # the assistant's options, before the choice
        options = rng.sample([v] + rest[:2], 3)
        diary.say(earlier, topic, f"Thinking about {TOPICS[topic][0].split(':')[0].lower()} again, any ideas?",
                  reply=f"A few people like {options[0]}, {options[1]} or {options[2]}; it depends what you want.")
        diary.say(when, topic, rng.choice(statements).format(v=v), qid)
        if other:
            diary.say(diary.day(), topic, other.format(f=rng.choice(FRIENDS), v=rest[-1]))
    for topic, first, later, question, values in UPDATES:
        a, b = rng.sample(values, 2)
        qid = ask(question, "update")
        d1 = diary.day(SPAN[0], dt.date(2026, 6, 30))
        diary.say(d1, topic, first.format(a=a), qid)
        diary.say(diary.day(d1 + dt.timedelta(days=20), dt.date(2026, 11, 10)), topic, later.format(a=a, b=b), qid)
    pros = rng.sample(PRO_NAMES, len(PRO_NAMES))
    for first, second, question, joins, ends in BRIDGES:
        pairs = list(zip(joins, ends)) if "{pro}" in first else list(zip(joins, rng.sample(ends, len(ends))))
        for join, end in rng.sample(pairs, 6):  # a profession keeps its own advice; any other end is drawn
            f = friends.pop()
            name = ""
            if "{pro}" in first:
                name = rng.choice(["Stelian", "Ayo", "Dario"]) if join == "mechanic" else \
                    f"{rng.choice(['Dr', 'Mr', 'Ms'])} {pros.pop()}"
            slots = {"thing": join, "group": join, "pro": join, "gift": join, "f": f, "city": end, "venue": end,
                     "place": end, "advice": end, "name": name, "month": rng.choice(MONTHS[8:11])}
            qid = ask(question.format(**slots), "multi-hop")
            d1 = diary.day(SPAN[0], dt.date(2026, 8, 31))
            topic1, topic2 = rng.sample(list(TOPICS), 2)
            diary.say(d1, topic1, first.format(**slots), qid)
            diary.say(diary.day(d1 + dt.timedelta(days=10), SPAN[1]), topic2, second.format(**slots), qid)
    anchors = {}
    for name, turn in ANCHORS:
        d = diary.day(dt.date(2026, 3, 1), dt.date(2026, 9, 30), avoid=set(anchors.values()))
        anchors[name] = d
        diary.say(d, rng.choice(list(TOPICS)), turn)
    families = list(ACTIVITIES)
    pool = {f: rng.sample(ACTIVITIES[f][3], len(ACTIVITIES[f][3])) for f in families}
    asked = []
    for k in range(20):
        name = list(anchors)[k % len(anchors)]
        # the k-th offset and family, or the next ones, so that no activity of the kind is asked within a week
        _, words, family, when = next(
            (o, w, f, anchors[name] + dt.timedelta(days=o))
            for j in range(len(OFFSETS)) for o, w in [OFFSETS[(k * 3 + j) % len(OFFSETS)]]
            for f in families[k % 4:] + families[: k % 4]
            if all(abs((anchors[name] + dt.timedelta(days=o) - t).days) >= 7 for t, fam in asked if fam == f))
        topic, turn, verb, _ = ACTIVITIES[family]
        qid = ask(f"{verb} {words.format(a=name)}?", "relative")
        diary.say(when, topic, turn.format(v=pool[family].pop()), qid)
        asked.append((when, family))
    for family in families:  # look-alikes: the same activity on days no question asks about
        topic, turn, _, _ = ACTIVITIES[family]
        for _ in range(min(4, len(pool[family]))):
            while True:
                d = diary.day()
                if all(abs((d - t).days) > 6 for t, fam in asked if fam == family):
                    break
            diary.say(d, topic, turn.format(v=pool[family].pop()))
    for topic, turn, question, values in PERIODIC:
        for (season, (m1, m2)), v in zip(SEASONS, rng.sample(values, 4)):
            qid = ask(question.format(s=season), "period")
            lo = max(SPAN[0], dt.date(2026, m1, 1))
            diary.say(diary.day(lo, min(SPAN[1], dt.date(2026, m2, 28))), topic, turn.format(v=v), qid)
    return write(rng, diary, questions)


def write(rng: random.Random, diary: Diary, questions: list[dict]) -> MemorySet:
    """The notes as Markdown (one section per turn, its text line a chunk), the chunks and the questions' evidence."""
    files: dict[str, list[str]] = {}
    chunks: list[tuple[str, str, int, str]] = []
    for date in sorted(diary.notes):
        for n, (topic, turns) in enumerate(sorted(diary.notes[date].items())):
            path = f"daily/{date.isoformat()}/{topic}.md"
            sid = f"{date:%Y%m%d}-{n + 1}"
            lines = ["---", f"name: {topic}", f"description: {TOPICS[topic][0]}", f"session_id: {sid}",
                     f'source_conversation: "[[sessions/dialog/{sid}.jsonl]]"', "---",
                     f"# {TOPICS[topic][0].split(':')[0]}, {date.day} {MONTHS[date.month - 1]}", ""]
            minute = rng.randrange(7 * 60, 22 * 60)
            for speaker, text, qids in turns:
                minute = min(minute + rng.randrange(1, 4), 23 * 60 + 59)
                lines += [f"### {minute // 60:02d}:{minute % 60:02d} {speaker}", text, ""]
                cid = f"{path}#{len(lines) - 1}"
                chunks.append((cid, path, len(lines) - 1, text))
                for q in qids:
                    questions[q - 1]["evidence"].append(cid)
            files[path] = lines
    return MemorySet(files, chunks, questions)


def words(text: str) -> set[str]:
    """Content words (lower case, no stop words, crude plural folding)."""
    return {w.rstrip("s") for w in re.findall(r"[a-z0-9']+", text.lower()) if w not in STOP and len(w) > 2}


def main() -> None:
    args = arguments(__doc__, SEED, "/tmp/reme-es-memory-set3")
    data = generate(args.seed)
    out = write_out(data, args.out)
    kinds = data.kinds()
    texts = {cid: text for cid, _, _, text in data.chunks}
    disjoint = 0
    for q in data.questions:
        disjoint += not any(words(q["question"]) & words(texts[c]) for c in q["evidence"])
    counts: dict[str, int] = {}
    for _, _, _, text in data.chunks:
        counts[text] = counts.get(text, 0) + 1
    repeated = sum(c for c in counts.values() if c > 1)
    print(f"{len(data.files)} notes, {len(data.chunks)} turns ({len(counts)} distinct texts, {repeated} turns whose "
          f"text occurs more than once), {len(data.questions)} questions {kinds}; {disjoint} share no content word "
          f"with their evidence -> {out}")


if __name__ == "__main__":
    main()
