"""Writes a small SYNTHETIC fixture in the layout and JSON format of SynDisco's released data.

The release is paper 000's data (repository dimits-ts/synthetic_moderation_experiments, commit
fde36171, ``data/discussions_output`` and ``data/annotation_output``). Nothing here is copied from it:
every text, name and prompt is generated below; only the file layout, the field names and types, the
shape of the prompts and of the rating labels follow the release. See README.md next to this file.

Run from anywhere: ``python tests/data/syndisco_release/make_fixture.py``. Deterministic (numpy seed);
rewrites ``data/``, ``truth.json`` and ``mismatch.json`` next to this file. Needs numpy only.
"""

from __future__ import annotations

import json
import math
import shutil
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "data"
SEED = 20250731

MODELS = ["llama-3.1-70b-4bit", "mistral-nemo-4bit", "qwen2.5-32b-4bit"]
STRATEGIES = {  # release folder -> the paper's name
    "no_moderator": "No Moderator",
    "vanilla": "No Instructions",
    "collective_constitution": "Rules Only",
    "erulemaking": "Regulation Room",
    "constructive_communications": "Constructive Communications",
    "moderation_game": "Moderation Game",
}
PER_CELL = 2  # discussions per model x strategy
N_USERS = 7
CTX_LENGTH = 3
USER_TURNS = 14  # generated user comments after the seed
ANNOTATOR_MODEL = "llama-3.1-70b-4bit"
ABLATION_ANNOTATOR_MODEL = "test_model2"  # as the release's no_instructions_toxicity files say
NO_SDB_REPEATS = 3  # vanilla_no_sdb: repeated runs of the one persona per discussion (the release: 10)

# -- the known rating generator ---------------------------------------------------------------------
# toxicity of a generated user comment = clip(round(b0 + b_s + (c + c_s) * time + offset_annotator + e), 1, 5)
# with e ~ N(0, SIGMA), time = the comment's user index (seed 1, first generated comment 2, ..., 15).
B0 = 2.5
C = 0.08
B_STRATEGY = {
    "No Instructions": -0.5,
    "Rules Only": -0.6,
    "Regulation Room": -0.7,
    "Constructive Communications": -0.8,
    "Moderation Game": -1.0,
}
C_STRATEGY = {
    "No Instructions": -0.01,
    "Rules Only": -0.04,
    "Regulation Room": -0.05,
    "Constructive Communications": -0.06,
    "Moderation Game": -0.08,
}
SIGMA = 0.5
ANNOTATOR_OFFSETS = [-0.3, 0.0, 0.3]
NO_SDB_OFFSET = 0.0
SEED_TOXICITY = 5  # every seed rating: deliberately high
FACILITATOR_TOXICITY = [1, 1, 1, 2]  # a uniform pick, for every facilitator rating (empty turns included)
QUIRK_RATE = 0.02  # share of labels written "Toxicity=k \nArgumentQuality=m" (a space, as in the release)

PAPER_ORDER = [
    "Intercept",
    "No Instructions",
    "Moderation Game",
    "Rules Only",
    "Regulation Room",
    "Constructive Communications",
    "time",
    "No Instructions×time",
    "Moderation Game×time",
    "Rules Only×time",
    "Regulation Room×time",
    "Constructive Communications×time",
]

# -- synthetic personas and prompts -------------------------------------------------------------------
TROLL = "You are a troll here and you want to provoke the other participants and break the rules"
VETERAN = "You are a long-standing member of this community and want the others to respect its norms"
ROLES = [TROLL] * 3 + [VETERAN] * 3 + [""] * 8  # fixed per persona, as in the release
SEXES = ["female", "male", "non-binary"]
ORIENTATIONS = ["Heterosexual", "Gay", "Bisexual", "Asexual"]
GROUPS = ["Group A", "Group B", "Group C", "Group D"]
JOBS = ["Teacher", "Nurse", "Clerk", "Engineer", "Student", "Driver", "Cook", "Retired"]
EDUCATION = ["High School", "Bachelor's", "Master's", "PhD"]
TRAITS = ["calm", "curious", "blunt", "patient", "stubborn", "cheerful", "sceptical", "shy", "loud"]

USER_INSTRUCTIONS = (
    "You are a person in an online forum.\nWrite a short reply to the post and to the other users.\n"
    "Defend your opinion, and you may get heated when provoked.\n"
    "Address users as @username.\nWrite an empty string to stay silent."
)
BASIC_INSTRUCTIONS = "You are a person in an online forum.\nWrite a short reply.\nAddress users as @username."
MODERATOR_INSTRUCTIONS = {
    "vanilla": "You are a forum moderator.\nKeep the discussion civil.\nWrite an empty string when not responding.",
    "collective_constitution": "You are a forum moderator.\nEnforce these rules: 1. be polite. 2. stay on topic.\n"
    "Write an empty string when not responding.",
    "erulemaking": "You are a forum facilitator.\nAsk users to explain their claims and to read the sources.\n"
    "Write an empty string when not responding.",
    "constructive_communications": "You are a forum facilitator.\nReflect what users say and invite the quiet ones.\n"
    "Write an empty string when not responding.",
    "moderation_game": "You are a forum moderator playing a game.\nYou score points for civil discussions and "
    "lose points for interventions.\nWrite an empty string when not responding.",
}
ANNOTATOR_INSTRUCTIONS = (
    "Rate each comment of an online discussion.\nToxicity: 1 (not toxic) to 5 (extremely toxic).\n"
    "ArgumentQuality: 1 (very high quality) to 5 (low quality).\n"
    'Answer in the form "Toxicity=<number>\nArgumentQuality=<number>".'
)
OPINIONS = [
    "the new parking rules are unfair",
    "school uniforms should be optional",
    "the city should ban cars downtown",
    "remote work makes teams worse",
    "public libraries need longer hours",
    "tipping should be abolished",
]
VERBS = ["agree", "disagree", "doubt it", "am not sure", "insist", "wonder why"]


def persona_traits(rng: np.random.Generator, name: str, special: str) -> str:
    """The user prompt's trait list (the release's ``username: X, age: .., ...`` shape)."""
    traits = [str(t) for t in rng.choice(TRAITS, size=int(rng.integers(2, 5)), replace=False)]
    return (
        f"username: {name}, age: {int(rng.integers(19, 75))}, sex: {rng.choice(SEXES)}, "
        f"sexual_orientation: {rng.choice(ORIENTATIONS)}, demographic_group: {rng.choice(GROUPS)}, "
        f"current_employment: {rng.choice(JOBS)}, education_level: {rng.choice(EDUCATION)}, "
        f"special_instructions: {special}, personality_characteristics: {traits}"
    )


def user_prompt(name: str, traits: str, instructions: str) -> str:
    return (
        f"You are a human participating in an online chatroom. Your name is {name}. "
        f"Your traits: {traits} Your instructions: {instructions}"
    )


def moderator_prompt(folder: str) -> str:
    return (
        "You are a human participating in an online chatroom. Your name is moderator. "
        f"Your traits: fair, attentive, calm Your instructions: {MODERATOR_INSTRUCTIONS[folder]}"
    )


def annotator_prompt(traits: str) -> str:
    return (
        f"You are a human annotator Your name is annotator. Your traits: {traits} "
        f"Your instructions: {ANNOTATOR_INSTRUCTIONS}"
    )


class Clock:
    """Timestamps in the release's ``yy-mm-dd-HH-MM`` form, one per file, advancing."""

    def __init__(self, start: datetime):
        self.now = start

    def tick(self, minutes: int = 7) -> str:
        self.now += timedelta(minutes=minutes)
        return self.now.strftime("%y-%m-%d-%H-%M")


def new_id(rng: np.random.Generator) -> str:
    return str(uuid.UUID(bytes=rng.bytes(16), version=4))


def write_json(path: Path, obj: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=4, ensure_ascii=False), encoding="utf8")  # no final newline, as the release


# -- discussions ----------------------------------------------------------------------------------------
def next_speaker(rng: np.random.Generator, users: list[str], last: str, turn: int, mode: str, seed_idx: int) -> str:
    """The release's turn taking: a uniform pick among the other users (the seed poster may answer first)."""
    if mode == "round_robin":
        return users[(seed_idx + turn) % len(users)]
    if turn == 1:  # the seed poster is not registered as the last speaker: all 7 may come first
        return str(rng.choice(users))
    return str(rng.choice([u for u in users if u != last]))


def make_discussion(
    rng: np.random.Generator,
    pool: list[dict],
    *,
    tag: str,
    model: str,
    timestamp: str,
    moderated_by: str | None,
    turn_mode: str = "random",
    n_entries: int | None = None,
    prompt_mode: str = "full",
) -> dict:
    """One discussion in the release's JSON. ``moderated_by``: the moderator prompt's strategy folder."""
    members = [pool[i] for i in sorted(rng.choice(len(pool), size=N_USERS, replace=False))]
    users = [p["name"] for p in members]
    prompts = []
    for p in members:
        if prompt_mode == "no_sdb":
            traits = (
                f"username: {p['name']}, age: unknown, sex: unknown, sexual_orientation: unknown, "
                "demographic_group: unknown, current_employment: unknown, education_level: unknown, "
                "special_instructions: , personality_characteristics: unknown"
            )
        elif prompt_mode == "no_roles":
            # the release's no_roles prompts hold "special_instructions: ," and, for some users,
            # "special_instructions:  ," (a space)
            traits = p["traits"].replace(f"special_instructions: {p['special']},", "special_instructions: ,")
            if p["special"] == VETERAN:
                traits = traits.replace("special_instructions: ,", "special_instructions:  ,")
        else:
            traits = p["traits"]
        instr = BASIC_INSTRUCTIONS if prompt_mode == "basic" else USER_INSTRUCTIONS
        prompts.append(user_prompt(p["name"], traits, instr))

    seed_idx = int(rng.integers(N_USERS))
    topic = str(rng.choice(OPINIONS))
    logs = [{"name": users[seed_idx], "text": f"Seed post of discussion {tag}: {topic}.", "model": "hardcoded"}]
    last = users[seed_idx]
    n_mod = USER_TURNS if moderated_by else 0
    silent = set()
    if moderated_by:  # several silent (empty) facilitator turns per discussion
        silent = {int(k) for k in rng.choice(np.arange(1, USER_TURNS + 1), size=int(rng.integers(2, 6)), replace=False)}
    for turn in range(1, USER_TURNS + 1):
        speaker = next_speaker(rng, users, last, turn, turn_mode, seed_idx)
        verb = str(rng.choice(VERBS))
        text = f"@{last} Comment {turn} by {speaker} in discussion {tag}. I {verb}."
        if turn == 3:
            text += " A naïve take, honestly."  # some non-ASCII text (the release has plenty)
        logs.append({"name": speaker, "text": text, "model": model})
        if turn <= n_mod:
            mtext = "" if turn in silent else f"@{speaker} Facilitator note {turn} in discussion {tag}."
            logs.append({"name": "moderator", "text": mtext, "model": model})
        last = speaker
    if n_entries is not None:
        logs = logs[:n_entries]
    return {
        "id": new_id(rng),
        "timestamp": timestamp,
        "users": users,
        "moderator": "moderator" if moderated_by else None,
        "user_prompts": prompts,
        "moderator_prompt": moderator_prompt(moderated_by) if moderated_by else None,
        "ctx_length": CTX_LENGTH,
        "logs": logs,
    }


# -- ratings --------------------------------------------------------------------------------------------
def mean_toxicity(strategy: str, time: int, offset: float) -> float:
    return B0 + B_STRATEGY.get(strategy, 0.0) + (C + C_STRATEGY.get(strategy, 0.0)) * time + offset


def user_time(position: int, moderated: bool) -> int:
    """The paper's time of the log entry at ``position`` (0-based): the user index, seed 1."""
    order = position + 1
    return order // 2 + 1 if moderated else order


def rate(rng: np.random.Generator, disc: dict, strategy: str, offset: float, n: int | None = None) -> list[list[str]]:
    """The ``logs`` of one annotation file: ``[[text, "Toxicity=k\\nArgumentQuality=m"], ...]`` in log order."""
    moderated = disc["moderator"] is not None
    out = []
    for position, entry in enumerate(disc["logs"][:n]):
        if entry["model"] == "hardcoded":
            tox = SEED_TOXICITY
        elif moderated and entry["name"] == disc["moderator"]:
            tox = int(rng.choice(FACILITATOR_TOXICITY))
        else:
            mu = mean_toxicity(strategy, user_time(position, moderated), offset)
            tox = int(np.clip(np.round(mu + rng.normal(0.0, SIGMA)), 1, 5))
        aq = int(np.clip(np.round(2.5 + rng.normal(0.0, 1.0)), 1, 5))
        sep = " \n" if rng.random() < QUIRK_RATE else "\n"
        out.append([entry["text"], f"Toxicity={tox}{sep}ArgumentQuality={aq}"])
    return out


def annotation(conv: dict, timestamp: str, model: str, prompt: str, logs: list) -> dict:
    return {
        "conv_id": conv["id"],
        "timestamp": timestamp,
        "annotator_model": model,
        "annotator_prompt": prompt,
        "ctx_length": CTX_LENGTH,
        "logs": logs,
    }


# -- the expected and realised Table 2 on this fixture ----------------------------------------------------
def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def expected_rating(mu: float) -> float:
    """E[clip(round(mu + e), 1, 5)], e ~ N(0, SIGMA)."""
    cuts = [_phi((k + 0.5 - mu) / SIGMA) for k in range(1, 5)]  # P(rating <= k)
    probs = [cuts[0]] + [cuts[k] - cuts[k - 1] for k in range(1, 4)] + [1.0 - cuts[3]]
    return sum((k + 1) * p for k, p in enumerate(probs))


def design(strategies: list[str], times: list[int]) -> np.ndarray:
    cols = [np.ones(len(times))]
    order = ["No Instructions", "Moderation Game", "Rules Only", "Regulation Room", "Constructive Communications"]
    s = np.array(strategies)
    t = np.array(times, dtype=float)
    cols += [(s == name).astype(float) for name in order]
    cols.append(t)
    cols += [(s == name) * t for name in order]
    return np.column_stack(cols)


def ols(x: np.ndarray, y: np.ndarray) -> tuple[dict, float]:
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ beta
    n, k = x.shape
    r2 = 1.0 - resid @ resid / ((y - y.mean()) @ (y - y.mean()))
    adj = 1.0 - (1.0 - r2) * (n - 1) / (n - k)
    return {name: round(float(b), 10) for name, b in zip(PAPER_ORDER, beta)}, round(float(adj), 10)


# -- main -------------------------------------------------------------------------------------------------
def main() -> None:
    rng = np.random.default_rng(SEED)
    if OUT.exists():
        shutil.rmtree(OUT)

    pool = []
    for i, special in enumerate(ROLES):
        name = f"user{i + 1:02d}"
        pool.append({"name": name, "special": special, "traits": persona_traits(rng, name, special)})
    annotators = []
    for _ in ANNOTATOR_OFFSETS:
        traits = persona_traits(rng, "annotator", "")
        annotators.append(annotator_prompt(traits))
    no_sdb_annotator = annotator_prompt(
        "username: annotator, age: 0, sex: unknown, sexual_orientation: unknown, demographic_group: unknown, "
        "current_employment: unknown, education_level: unknown, special_instructions: Follow the instructions "
        "carefully, personality_characteristics: ['neutral', 'careful']"
    )

    disc_clock = Clock(datetime(2025, 1, 20, 9, 0))
    ann_clock = Clock(datetime(2025, 2, 20, 9, 0))
    # (c) one main discussion cut short; (filename) two discussions in different folders share a timestamp
    cut_short = ("erulemaking", "qwen2.5-32b-4bit", 1)
    shared_stamp = {("collective_constitution", MODELS[0], 0), ("erulemaking", MODELS[0], 0)}
    stamp_for_shared = None

    main_discs: list[tuple[str, dict, Path]] = []
    n = 0
    for folder, strategy in STRATEGIES.items():
        for model in MODELS:
            for k in range(PER_CELL):
                n += 1
                if (folder, model, k) in shared_stamp:
                    stamp_for_shared = stamp_for_shared or disc_clock.tick()
                    stamp = stamp_for_shared
                else:
                    stamp = disc_clock.tick()
                disc = make_discussion(
                    rng,
                    pool,
                    tag=f"d{n:02d}",
                    model=model,
                    timestamp=stamp,
                    moderated_by=None if folder == "no_moderator" else folder,
                    n_entries=14 if (folder, model, k) == cut_short else None,
                )
                path = OUT / "discussions_output" / "main" / folder / f"{stamp}.json"
                write_json(path, disc)
                main_discs.append((strategy, disc, path))

    # main annotations: every discussion x 3 personas, every log entry rated
    ratings_rows = []  # (strategy, time, annotator offset, toxicity, is_seed) of user/seed rows, for truth.json
    first_main_annotation = None
    explanation_done = False
    for strategy, disc, _ in main_discs:
        moderated = disc["moderator"] is not None
        for offset, prompt in zip(ANNOTATOR_OFFSETS, annotators):
            logs = rate(rng, disc, strategy, offset)
            if not explanation_done and strategy == "Rules Only":
                # one label with trailing prose, as one in the release
                logs[1][1] += " \n\nExplanation: the comment disagrees politely."
                explanation_done = True
            stamp = ann_clock.tick(5)
            ann = annotation(disc, stamp, ANNOTATOR_MODEL, prompt, logs)
            path = OUT / "annotation_output" / "main" / f"{stamp}.json"
            write_json(path, ann)
            if first_main_annotation is None and moderated and strategy == "Moderation Game":
                first_main_annotation = (path, ann)
            for position, (entry, (_, label)) in enumerate(zip(disc["logs"], logs)):
                if moderated and entry["name"] == disc["moderator"]:
                    continue
                tox = int(label.split("=")[1].split()[0])
                ratings_rows.append(
                    (strategy, user_time(position, moderated), offset, tox, entry["model"] == "hardcoded")
                )

    # ablations: 2 Qwen discussions each, the Moderation Game facilitator prompt
    ablations = {
        ("turn_taking", "random"): {"turn_mode": "random"},
        ("turn_taking", "round_robin"): {"turn_mode": "round_robin"},
        ("prompts", "basic_instructions"): {"prompt_mode": "basic"},
        ("prompts", "no_roles"): {"prompt_mode": "no_roles"},
        ("prompts", "no_sdb"): {"prompt_mode": "no_sdb"},
    }
    abl_clock = Clock(datetime(2025, 4, 10, 13, 0))
    basic = []
    n = 0
    for (group, name), kw in ablations.items():
        for _ in range(2):
            n += 1
            stamp = abl_clock.tick()
            disc = make_discussion(
                rng,
                pool,
                tag=f"a{n:02d}",
                model="qwen2.5-32b-4bit",
                timestamp=stamp,
                moderated_by="moderation_game",
                **kw,
            )
            write_json(OUT / "discussions_output" / "ablation" / group / name / f"{stamp}.json", disc)
            if name == "basic_instructions":
                basic.append(disc)

    # no_instructions_toxicity: the basic_instructions discussions x the 3 personas; the labels hold
    # Toxicity AND ArgumentQuality, annotator_model "test_model2" (as the release's files)
    abl_ann_clock = Clock(datetime(2025, 4, 29, 12, 0))
    for disc in basic:
        for offset, prompt in zip(ANNOTATOR_OFFSETS, annotators):
            stamp = abl_ann_clock.tick(5)
            logs = rate(rng, disc, "Moderation Game", offset)
            write_json(
                OUT / "annotation_output" / "ablation" / "no_instructions_toxicity" / f"{stamp}.json",
                annotation(disc, stamp, ABLATION_ANNOTATOR_MODEL, prompt, logs),
            )

    # vanilla_no_sdb: the main No Instructions discussions x NO_SDB_REPEATS runs of one persona without
    # sociodemographics; one discussion is rated only on its first 15 log entries (a prefix, as 8 in the release)
    nosdb_clock = Clock(datetime(2025, 4, 28, 14, 0))
    vanilla = [(s, d) for s, d, _ in main_discs if s == "No Instructions"]
    prefix_conv = vanilla[-1][1]["id"]
    for strategy, disc in vanilla:
        for _ in range(NO_SDB_REPEATS):
            stamp = nosdb_clock.tick(4)
            logs = rate(rng, disc, strategy, NO_SDB_OFFSET, n=15 if disc["id"] == prefix_conv else None)
            write_json(
                OUT / "annotation_output" / "ablation" / "vanilla_no_sdb" / f"{stamp}.json",
                annotation(disc, stamp, ANNOTATOR_MODEL, no_sdb_annotator, logs),
            )

    # mismatch.json: a main annotation file whose text disagrees with its discussion at position 5
    path, ann = first_main_annotation
    bad = json.loads(json.dumps(ann))
    bad["logs"][5][0] = bad["logs"][5][0].replace("Comment", "Remark", 1)
    write_json(HERE / "mismatch.json", bad)

    # truth.json
    strategies = [r[0] for r in ratings_rows]
    times = [r[1] for r in ratings_rows]
    user = np.array([not r[4] for r in ratings_rows])
    y = np.array([r[3] for r in ratings_rows], dtype=float)
    ey = np.array([SEED_TOXICITY if r[4] else expected_rating(mean_toxicity(r[0], r[1], r[2])) for r in ratings_rows])
    x = design(strategies, times)
    fixture, fixture_adj = ols(x[user], y[user])
    expected, _ = ols(x[user], ey[user])
    fixture_seed, fixture_seed_adj = ols(x, y)
    expected_seed, _ = ols(x, ey)
    generator = {"Intercept": B0, "time": C}
    generator.update(B_STRATEGY)
    generator.update({f"{k}×time": v for k, v in C_STRATEGY.items()})
    truth = {
        "description": "The known generator of the fixture's toxicity ratings and Table 2 on the fixture. "
        "toxicity = clip(round(Intercept + strategy + (time + strategy×time) * time + annotator_offset + "
        "N(0, sigma)), 1, 5) for generated user comments; time = the user index (seed 1, generated comments 2..15; "
        "message_order // 2 + 1 in moderated discussions, message_order unmoderated, message_order = 1-based log "
        "position). OLS toxicity ~ C(strategy, Treatment('No Moderator')) * time over the main study's ratings, "
        "joined on (conv_id, position).",
        "seed": SEED,
        "generator": {name: generator[name] for name in PAPER_ORDER},
        "sigma": SIGMA,
        "annotator_offsets": ANNOTATOR_OFFSETS,
        "no_sdb_annotator_offset": NO_SDB_OFFSET,
        "seed_toxicity": SEED_TOXICITY,
        "facilitator_toxicity_uniform_from": FACILITATOR_TOXICITY,
        "argument_quality": "clip(round(2.5 + N(0, 1)), 1, 5) for every entry",
        "ablation_ratings": "no_instructions_toxicity: the Moderation Game generator with the 3 annotator offsets; "
        "vanilla_no_sdb: the No Instructions generator with offset 0",
        "counts": {
            "main_discussions": len(main_discs),
            "main_annotation_files": len(main_discs) * len(ANNOTATOR_OFFSETS),
            "main_ratings": sum(len(d["logs"]) for _, d, _ in main_discs) * len(ANNOTATOR_OFFSETS),
            "table2_n": int(user.sum()),
            "table2_n_with_seed": len(ratings_rows),
        },
        "table2_fixture": {"params": fixture, "adj_r2": fixture_adj, "n": int(user.sum())},
        "table2_expected": {
            "note": "E[OLS estimate] over the noise on this fixture's design: OLS of the exact expected ratings "
            "(rounding and clipping included). The realised fixture estimates scatter around these.",
            "params": expected,
        },
        "table2_fixture_with_seed": {"params": fixture_seed, "adj_r2": fixture_seed_adj, "n": len(ratings_rows)},
        "table2_expected_with_seed": {"params": expected_seed},
        "mismatch": {
            "file": "mismatch.json",
            "target": str(path.relative_to(HERE)),
            "position": 5,
            "note": "copy over the target in a copy of the fixture: its text at position 5 differs from the "
            "discussion's",
        },
    }
    (HERE / "truth.json").write_text(json.dumps(truth, indent=2, ensure_ascii=False) + "\n", encoding="utf8")


if __name__ == "__main__":
    main()
