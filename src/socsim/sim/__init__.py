"""The simulation engine every study runs on.

- episode: a self-contained setup (Speaker, Episode), the turn record (Turn, Transcript) and
  `play`, the one loop: opening, then policy -> view -> request -> reply until a stop rule holds;
- policies: who speaks next (round robin, random, respond, alternate, a pair schedule);
- views: what a speaker sees (a window of recent turns, the whole history as chat, a Memory);
- stop: when an episode ends (turn budget, "Goodbye.");
- runner: probe the clients, run episodes concurrently behind a progress bar, close the clients;
- judge: judging/annotation over finished transcripts (target + window + constraint + seed).
"""
