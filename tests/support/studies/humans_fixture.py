"""socsim's synthetic human workbook (`data/facilitation/humans_fixture.xlsx`): the layout of paper 000's
Regulation Room workbook (a Key sheet, topic sheets with either header, COMMENT PARENT replies, HTML, the
`_x000D_` escape, a quote-only comment, a totals row) with a planted answer: every comment of a discussion shares
its first `s` of `length` words with the others and no other word, so each pair's ROUGE-L F1 is s / length and the
discussion's diversity exactly 1 - s / length (`PLANTED`). No person wrote any of it.

    python tests/support/studies/humans_fixture.py     # rewrites the workbook (the tests check it reads back)
"""

from __future__ import annotations

import itertools
from pathlib import Path

from socsim.facilitation.humans import FIXTURE_MARK

PATH = Path(__file__).resolve().parents[3] / "data" / "facilitation" / "humans_fixture.xlsx"
# (sheet, layout, shared words s, words a comment `length`, comments) per discussion; diversity 1 - s / length.
_MIX = [(1, 20)] * 8 + [(2, 20)] * 16 + [(3, 20)] * 10 + [(2, 10)] * 6  # 0.95, 0.90, 0.85, 0.80
SHEETS = {"Fixture Posts": "post", "Fixture Topics": "topic", "Fixture Late Sheet": "post"}
POST_HEADER = ["COMMENT ID", "POST ID", "USER LOGIN", "DATE", "DATE GMT", "COMMENT", "COMMENT PARENT", "USER ID"]
TOPIC_HEADER = ["COMMENT ID", "TOPIC", "SUBTOPIC", "USER LOGIN", "DATETIME", "COMMENT", "COMMENT PARENT", "USER ID",
                "ENDORSEMENTS"]  # fmt: skip


def design() -> list[dict[str, object]]:
    """The planted discussions: sheet, post key, s, length, comment count and their diversity."""
    out = []
    sheets = itertools.cycle(SHEETS)
    for i, (s, length) in enumerate(_MIX):
        sheet = next(sheets)
        post = f"{100 + i}" if SHEETS[sheet] == "post" else f"Topic {i % 3} / Subtopic {i}"
        out.append({"sheet": sheet, "post": post, "s": s, "length": length, "comments": 4 + i % 3,
                    "diversity": 1 - s / length})  # fmt: skip
    return out


PLANTED = {f"{d['sheet']} / {d['post']}": d["diversity"] for d in design()}


def _text(d: int, c: int, s: int, length: int) -> str:
    """Comment c of discussion d: its discussion's s shared words, then words of its own, in HTML and escapes."""
    words = [f"shared{d}w{k}" for k in range(s)] + [f"own{d}c{c}w{k}" for k in range(length - s)]
    mid = len(words) // 2
    return f"<p>{' '.join(words[:mid])}_x000D_{' '.join(words[mid:])}</p>"


def write(path: Path = PATH) -> Path:
    import openpyxl

    wb = openpyxl.Workbook()
    key = wb.active
    key.title = "Key"
    key.append([f"{FIXTURE_MARK}: synthetic comments in the layout of paper 000's Regulation Room workbook; no people"])
    key.append(["written by tests/support/studies/humans_fixture.py (its PLANTED diversities)"])
    sheets = {name: wb.create_sheet(name) for name in SHEETS}
    for name, ws in sheets.items():
        ws.append(POST_HEADER if SHEETS[name] == "post" else TOPIC_HEADER)
    cid = 1000
    for d, spec in enumerate(design()):
        ws, layout = sheets[str(spec["sheet"])], SHEETS[str(spec["sheet"])]
        first = cid
        for c in range(int(spec["comments"])):
            cid += 1
            parent = 0 if c == 0 else first + 1 if c % 2 else cid - 1  # replies to the top comment and to each other
            text = _text(d, c, int(spec["s"]), int(spec["length"]))
            user = f"user{(d + c) % 7}"
            if layout == "post":
                ws.append([cid, int(str(spec["post"])), user, "2012-01-01", "2012-01-01", text, parent, 7])
            else:
                topic, sub = str(spec["post"]).split(" / ")
                ws.append([cid, topic, sub, user, "2012-01-01 10:00", text, parent, 7, 0])
        if d == 0:  # a quote-only comment (dropped by the authors' rule)
            cid += 1
            ws.append([cid, int(str(spec["post"])), "user0", "2012-01-01", "2012-01-01", '""', first + 1, 7])
    sheets["Fixture Topics"].append([None] * 8 + ["=SUM(I2:I99)"])  # a totals row, as the release's
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(path)
    return path


if __name__ == "__main__":
    print(write())
