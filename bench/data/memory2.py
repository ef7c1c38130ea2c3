"""A second conversational-memory set, built differently from bench/data/memory.py, for reporting only (no default
is chosen on it): group chats of three people over eleven months, longer sessions, its own vocabulary and line
format, and questions that need two turns from different days or a date relative to another event.

    python -m bench.data.memory2 [--seed 7] [--out DIR]     # writes the workspace and questions.jsonl to look at

Each group (three people) meets on ~22 days between 2026-01-03 and 2026-11-28; a day is one ReMe daily note,
`daily/YYYY-MM-DD/<group>.md`, of 22-38 timestamped lines (`- [19:42] Name: text`), every line one chunk. Filler
lines are composed from templates and slot values, so few texts repeat word for word (the first set repeats small
talk verbatim). Questions, asked as on 2026-12-01 (the reference date of relative expressions):
  fact          one turn, paraphrased
  multi-hop     a relative is named in one turn ("my cousin Ines") and a fact about that name is said on another
                day, often by someone else; the question names the relative, not the name
  relative date "What did Rafa host two weeks after the move?": the anchor event on one day, the asked event on the
                day the offset names, and two look-alike events on other days; evidence: the asked turn
  month         the same kind of event in three months; "What did Rafa repair last June?"; evidence: June's
No data is fetched; the same seed always gives the same notes and questions.
"""

from __future__ import annotations

import datetime as dt
import random

from bench.data.conversations import MONTHS, MemorySet, arguments, write_out

SEED = 7
SPAN = (dt.date(2026, 1, 3), dt.date(2026, 11, 28))
TODAY = dt.date(2026, 12, 1)  # when the questions are asked
GROUPS = [("Rafa", "Odile", "Kwame"), ("Sunita", "Viktor", "Paloma"), ("Hugo", "Ingrid", "Tomasz"),
          ("Leilani", "Arjun", "Beatriz"), ("Emeka", "Solveig", "Dario"), ("Yara", "Callum", "Mirela"),
          ("Nikos", "Fatima", "Joaquin"), ("Astrid", "Bongani", "Chiara")]
RELATIVES = ["cousin", "brother-in-law", "old roommate", "godmother", "stepsister", "uncle"]
BRIDGE_NAMES = ["Ines", "Bruno", "Odette", "Matteo", "Saoirse", "Teodor", "Lucinda", "Ambrose", "Noor", "Casimir",
                "Henrike", "Ulises", "Wilhelmina", "Zdenek", "Rosalind", "Bartek", "Aurelie", "Florin", "Mireille",
                "Gideon", "Esperanza", "Leopold", "Ottilie", "Severin"]
BRIDGE_FACTS = [  # (said about the name, question about the relative)
    ("{n} just bought an old sailboat and named it the {boat}.", "What is the name of the boat {me}'s {rel} bought?"),
    ("{n} is training for the {city} marathon in the autumn.", "Which marathon is {me}'s {rel} running?"),
    ("{n} opened a little {cuisine} place near the station, the queue was round the block.",
     "What kind of restaurant did {me}'s {rel} open?"),
    ("{n} got the job as a {job} at the aquarium, starts next month.", "What job did {me}'s {rel} get?"),
    ("{n} is learning to play the {instrument}, the neighbours are thrilled.",
     "Which instrument has {me}'s {rel} taken up?"),
]
BOATS = ["Marguerite", "Saltwind", "Little Auk", "Perpetua", "Blue Heron", "Tamsin"]
CITIES = ["Rotterdam", "Valencia", "Helsinki", "Dublin", "Krakow", "Seville", "Gothenburg", "Antwerp"]
CUISINES = ["Georgian", "Ethiopian", "Peruvian", "Sichuan", "Lebanese", "Basque"]
JOBS = ["marine biologist", "tank diver", "night keeper", "education officer", "veterinary nurse"]
INSTRUMENTS = ["bassoon", "hurdy-gurdy", "harp", "euphonium", "theremin", "accordion"]
FACTS = [  # single-turn facts: (turn, question)
    ("Signed the lease on an allotment plot, going to try growing {veg} this year.",
     "What vegetable is {me} planting?"),
    ("The band finally settled on {bandname} as our name, took three rehearsals.", "What did {me}'s band call itself?"),
    ("I'm swapping my commute for the {transport} from now on, cheaper and no traffic.",
     "How will {me} get to work from now on?"),
    ("My grandmother's {heirloom} is coming to me, Mum sorted it out with the lawyer.",
     "What is {me} inheriting from a grandparent?"),
]
VEG = ["artichokes", "kohlrabi", "sweetcorn", "celeriac", "broad beans", "pak choi"]
BANDNAMES = ["The Velvet Ledger", "Quiet Arson", "Paper Lanterns", "Moth Parade", "Second Breakfast"]
TRANSPORT = ["ferry", "e-scooter", "night bus", "tram", "folding bike"]
HEIRLOOMS = ["grandfather clock", "writing desk", "sewing box", "pearl necklace", "piano stool"]
ANCHORS = [("the move", "The movers left an hour ago, we're officially living in the new flat!"),
           ("the surgery", "Home from the hospital, the surgeon says the operation went perfectly."),
           ("the wedding", "Still floating after the wedding yesterday, thank you all for coming."),
           ("the Azores trip", "Back from the Azores trip last night, the whale watching was unreal.")]
RELATIVE_EVENTS = [  # (turn template, question verb phrase): three look-alikes per person, one asked
    ("Hosted a {dish} dinner for the neighbours tonight, nobody left hungry.", "host for the neighbours"),
    ("Spent the afternoon hanging the {art} in the hallway.", "hang in the hallway"),
]
DISHES = ["paella", "lasagne", "ramen", "tagine", "fondue", "curry", "barbecue", "pierogi"]
ARTS = ["old map", "mirror", "family photos", "tapestry", "film posters", "woodcut print"]
REPAIRS = ["boiler", "garden gate", "bathroom tap", "washing machine", "bike brakes", "roof gutter", "doorbell",
           "kitchen drawer"]
OFFSETS = [(7, "a week"), (14, "two weeks"), (21, "three weeks"), (30, "a month")]
FILLER = [
    "Did anyone check whether the {place} is open on {weekday}?", "I can bring {food} if someone sorts drinks.",
    "The {room} still smells of {smell}, no idea why.", "{friend} says hi, by the way.",
    "Running late, the {transport} is crawling again.", "Who has the spare key for the {place}?",
    "I'm knackered, {weekday} was endless.", "We need to talk about the {room} paint, {colour} is too much.",
    "Has anyone seen my {thing}?", "Reminder: bins go out on {weekday}.", "Loved the photos from the {place}!",
    "Can we move the call to {weekday} evening?", "I found a {food} recipe that might actually work.",
    "Honestly the {thing} was cheaper at the market.", "{friend} is coming along on {weekday}, hope that's fine.",
    "Ugh, the {thing} broke again.", "Good shout about the {place}, it was quiet.",
]
SLOTS = {
    "place": ["community hall", "rooftop bar", "swimming baths", "flea market", "library café", "climbing wall"],
    "weekday": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "food": ["flatbread", "lentil soup", "cheesecake", "dumplings", "focaccia", "pickled onions"],
    "room": ["spare room", "landing", "kitchen", "study", "porch"],
    "smell": ["damp", "varnish", "burnt toast", "wet dog"],
    "friend": ["Priyanka", "Otto", "Greta", "Lamar", "Fenna"],
    "transport": ["tram", "ferry", "night bus", "ring road"],
    "colour": ["ochre", "teal", "mustard", "lilac"],
    "thing": ["umbrella", "charger", "headphones", "bike lock", "thermos", "library card"],
}


def fill(rng: random.Random, template: str) -> str:
    """A filler template with each slot drawn."""
    return template.format(**{k: rng.choice(v) for k, v in SLOTS.items()})


class Group:
    """One group's notes: date -> [(speaker, text, question ids)], with turns placed on given or drawn days."""

    def __init__(self, rng: random.Random, people: tuple[str, ...], slug: str):
        self.rng, self.people, self.slug = rng, people, slug
        span = (SPAN[1] - SPAN[0]).days
        self.days: dict[dt.date, list[list]] = {}
        for d in sorted(rng.sample(range(span), 22)):
            self.day(SPAN[0] + dt.timedelta(days=d))

    def day(self, date: dt.date) -> list[list]:
        """The note of `date`, filled with 22-38 filler lines when new."""
        if date not in self.days:
            self.days[date] = [[self.people[i % 3], fill(self.rng, self.rng.choice(FILLER)), []]
                               for i in range(self.rng.randrange(22, 39))]
        return self.days[date]

    def put(self, date: dt.date, speaker: str, text: str, qid: int | None = None) -> None:
        """Insert a turn at a random place of `date`'s note (evidence of `qid` when given)."""
        turns = self.day(date)
        turns.insert(self.rng.randrange(len(turns) + 1), [speaker, text, [qid] if qid is not None else []])

    def some_day(self, lo: dt.date = SPAN[0], hi: dt.date = SPAN[1]) -> dt.date:
        """One of the group's days within [lo, hi] (a new one when none is)."""
        inside = [d for d in self.days if lo <= d <= hi]
        if inside:
            return self.rng.choice(inside)
        return lo + dt.timedelta(days=self.rng.randrange((hi - lo).days + 1))


def plant(g: Group, me: str, others: list[str], ask, names: list[str]) -> None:
    """Every kind of question about `me` (`ask(question, kind)` returns the question's id)."""
    rng = g.rng
    for turn, question in rng.sample(FACTS, 2):
        slots = dict(veg=rng.choice(VEG), bandname=rng.choice(BANDNAMES), transport=rng.choice(TRANSPORT),
                     heirloom=rng.choice(HEIRLOOMS), me=me)
        qid = ask(question.format(**slots), "fact")
        g.put(g.some_day(hi=dt.date(2026, 9, 30)), me, turn.format(**slots), qid)
    rel, name = rng.choice(RELATIVES), names.pop()
    said, question = rng.choice(BRIDGE_FACTS)
    qid = ask(question.format(me=me, rel=rel), "multi-hop")
    first = g.some_day(hi=dt.date(2026, 6, 30))
    g.put(first, me, f"My {rel} {name} is staying with us this week, {rng.choice(['lovely', 'chaotic', 'fun'])}.", qid)
    slots = dict(n=name, boat=rng.choice(BOATS), city=rng.choice(CITIES), cuisine=rng.choice(CUISINES),
                 job=rng.choice(JOBS), instrument=rng.choice(INSTRUMENTS))
    g.put(g.some_day(first + dt.timedelta(days=10), SPAN[1]), rng.choice(others + [me]), said.format(**slots), qid)
    anchor_name, anchor_turn = rng.choice(ANCHORS)
    (days, words), (event, verb) = rng.choice(OFFSETS), rng.choice(RELATIVE_EVENTS)
    anchor = g.some_day(dt.date(2026, 2, 1), dt.date(2026, 8, 31))
    g.put(anchor, me, anchor_turn)
    qid = ask(f"What did {me} {verb} {words} after {anchor_name}?", "relative date")
    values = rng.sample(DISHES if "dish" in event else ARTS, 3)
    far = [d for d in (anchor - dt.timedelta(days=60), anchor + dt.timedelta(days=days + 70)) if SPAN[0] <= d <= SPAN[1]]
    for value, when in zip(values, [anchor + dt.timedelta(days=days)] + far):
        g.put(when, me, event.format(dish=value, art=value), qid if when == anchor + dt.timedelta(days=days) else None)
    months = rng.sample(range(1, 10), 3)
    things = rng.sample(REPAIRS, 3)
    qid = ask(f"What did {me} repair last {MONTHS[months[0]]}?", "month")
    for month, thing in zip(months, things):
        when = g.some_day(dt.date(2026, month + 1, 1), dt.date(2026, month + 1, 28))
        g.put(when, me, f"Finally fixed the {thing} myself, only took one video tutorial.",
              qid if month == months[0] else None)


def generate(seed: int = SEED) -> MemorySet:
    """The whole second set for a seed."""
    rng = random.Random(seed)
    names = rng.sample(BRIDGE_NAMES, len(BRIDGE_NAMES))
    files: dict[str, list[str]] = {}
    chunks: list[tuple[str, str, int, str]] = []
    questions: list[dict] = []

    def ask(text: str, kind: str) -> int:
        questions.append({"id": len(questions) + 1, "question": text, "kind": kind, "evidence": []})
        return len(questions)

    for people in GROUPS:
        g = Group(rng, people, "-".join(p.lower() for p in people))
        for me in people:
            plant(g, me, [p for p in people if p != me], ask, names)
        for date in sorted(g.days):
            path = f"daily/{date.isoformat()}/{g.slug}.md"
            lines = ["---", f"date: {date.isoformat()}", f"group: {', '.join(people)}", "---", f"# {date:%A %d %B}",
                     ""]
            minute = rng.randrange(17 * 60, 19 * 60)
            for speaker, text, qids in g.days[date]:
                minute += rng.randrange(1, 6)
                lines.append(f"- [{minute // 60 % 24:02d}:{minute % 60:02d}] {speaker}: {text}")
                cid = f"{path}#{len(lines)}"
                chunks.append((cid, path, len(lines), lines[-1]))
                for q in qids:
                    questions[q - 1]["evidence"].append(cid)
            files[path] = lines
    return MemorySet(files, chunks, questions)


def main() -> None:
    args = arguments(__doc__, SEED, "/tmp/reme-es-memory-set2")
    data = generate(args.seed)
    out = write_out(data, args.out)
    print(f"{len(data.files)} notes, {len(data.chunks)} turns, {len(data.questions)} questions {data.kinds()} -> {out}")


if __name__ == "__main__":
    main()
