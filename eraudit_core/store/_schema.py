"""The DuckDB schema as numbered forward migrations (docs/design.md §6).

A store remembers its version; opening it applies every newer migration in order, and a
store written by a newer version of the tool is refused rather than misread.
"""

from __future__ import annotations

MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE benchmarks (
            benchmark_id VARCHAR PRIMARY KEY, name VARCHAR NOT NULL, source VARCHAR,
            sha256 VARCHAR, layout VARCHAR, attribution VARCHAR, n_pairs INTEGER,
            imported_at TIMESTAMP NOT NULL)""",
        """CREATE TABLE pairs (
            benchmark_id VARCHAR NOT NULL, pair_id VARCHAR NOT NULL, pair_index INTEGER NOT NULL,
            story_title VARCHAR, monitored_question VARCHAR NOT NULL,
            monitored_true VARCHAR NOT NULL, monitored_false VARCHAR NOT NULL,
            hidden_question VARCHAR NOT NULL, hidden_true VARCHAR NOT NULL,
            hidden_false VARCHAR NOT NULL, extra JSON,
            PRIMARY KEY (benchmark_id, pair_id))""",
        """CREATE TABLE checkpoints (
            fingerprint VARCHAR PRIMARY KEY, name VARCHAR, details JSON,
            registered_at TIMESTAMP NOT NULL)""",
        """CREATE TABLE paraphrases (
            benchmark_id VARCHAR NOT NULL, pair_id VARCHAR NOT NULL, role VARCHAR NOT NULL,
            generator VARCHAR NOT NULL, idx INTEGER NOT NULL, text VARCHAR NOT NULL,
            provenance JSON, created_at TIMESTAMP NOT NULL,
            PRIMARY KEY (benchmark_id, pair_id, role, generator, idx),
            UNIQUE (benchmark_id, pair_id, text))""",
        """CREATE TABLE paraphrase_rejections (
            benchmark_id VARCHAR NOT NULL, pair_id VARCHAR NOT NULL, generator VARCHAR,
            text VARCHAR, reason VARCHAR NOT NULL, created_at TIMESTAMP NOT NULL)""",
        """CREATE TABLE score_cache (
            fingerprint VARCHAR NOT NULL, prompt_hash VARCHAR NOT NULL, p_true DOUBLE NOT NULL,
            l_a_true_a DOUBLE, l_b_true_a DOUBLE, l_a_true_b DOUBLE, l_b_true_b DOUBLE,
            scored_at TIMESTAMP NOT NULL, PRIMARY KEY (fingerprint, prompt_hash))""",
        """CREATE TABLE runs (
            run_id VARCHAR PRIMARY KEY, label VARCHAR, status VARCHAR NOT NULL,
            config JSON NOT NULL, benchmark_id VARCHAR, source VARCHAR,
            pre_fingerprint VARCHAR, post_fingerprint VARCHAR, pre_name VARCHAR,
            post_name VARCHAR, n_pairs INTEGER, created_at TIMESTAMP NOT NULL,
            started_at TIMESTAMP, finished_at TIMESTAMP, error VARCHAR,
            cancel_requested BOOLEAN DEFAULT FALSE, queries_scored BIGINT DEFAULT 0,
            queries_cached BIGINT DEFAULT 0)""",
        """CREATE TABLE run_pairs (
            run_id VARCHAR NOT NULL, pair_id VARCHAR NOT NULL, pair_index INTEGER,
            monitored_question VARCHAR, hidden_question VARCHAR, status VARCHAR NOT NULL,
            stage INTEGER, gain DOUBLE, denominator DOUBLE, p_pre_monitored DOUBLE,
            p_post_monitored DOUBLE, p_pre_hidden DOUBLE, p_post_hidden DOUBLE, max_d DOUBLE,
            n_counterexamples INTEGER, n_search INTEGER, n_test INTEGER, bound_common DOUBLE,
            bound DOUBLE, bound_tolerant DOUBLE, generators JSON, target_reached BOOLEAN,
            finished_at TIMESTAMP NOT NULL, PRIMARY KEY (run_id, pair_id))""",
        """CREATE TABLE run_steps (
            run_id VARCHAR NOT NULL, pair_id VARCHAR NOT NULL, stage INTEGER NOT NULL,
            generator VARCHAR NOT NULL, t INTEGER NOT NULL, idx INTEGER, text VARCHAR,
            p_pre DOUBLE NOT NULL, p_post DOUBLE NOT NULL, d DOUBLE NOT NULL,
            is_counterexample BOOLEAN NOT NULL, bound DOUBLE, bound_tolerant DOUBLE,
            recorded_at TIMESTAMP NOT NULL,
            PRIMARY KEY (run_id, pair_id, stage, generator, t))""",
        "CREATE INDEX run_steps_run ON run_steps (run_id, pair_id)",
    ],
    # 2: the four-verdict vocabulary and run provenance. A stored "certified" pair
    # had no counterexample and every generator tested: it stays certified only when its run
    # set a target p* and the bound reaches it, else it is "passed". A failure-tolerant bound
    # stored over a subset of the generators is dropped (it did not cover min_g p_g), and the
    # rest get the total-variation relaxation the other bounds already had.
    2: [
        "ALTER TABLE runs ADD COLUMN provenance JSON",
        """UPDATE run_pairs SET status = 'passed' FROM runs
            WHERE run_pairs.run_id = runs.run_id AND run_pairs.status = 'certified'
            AND (TRY_CAST(json_extract_string(runs.config, '$.target') AS DOUBLE) IS NULL
                 OR run_pairs.bound
                    < TRY_CAST(json_extract_string(runs.config, '$.target') AS DOUBLE))""",
        """UPDATE run_pairs SET bound_tolerant = NULL
            WHERE bound_tolerant IS NOT NULL AND (
                len(json_extract(generators, '$[*].n')) = 0
                OR list_min(list_transform(json_extract(generators, '$[*].n'),
                                           lambda x: CAST(x AS INTEGER))) = 0)""",
        """UPDATE run_pairs SET bound_tolerant = greatest(0.0, bound_tolerant - coalesce(
                TRY_CAST(json_extract_string(runs.config, '$.tv_delta') AS DOUBLE), 0.0))
            FROM runs WHERE run_pairs.run_id = runs.run_id
            AND run_pairs.bound_tolerant IS NOT NULL""",
    ],
    # 3: live traffic of a run scored by a served checkpoint (requests in flight, prompts/s),
    # written by the engine while it runs, so any process polling the store can show it.
    3: ["ALTER TABLE runs ADD COLUMN traffic JSON"],
    # 4: who runs a run (pid, host, a token against pid reuse) and its last heartbeat,
    # so a run whose process died reads as interrupted to the next process. Runs left
    # pending or running by a version that recorded no owner cannot be running any more
    # (that version held the file for its whole lifetime).
    4: [
        "ALTER TABLE runs ADD COLUMN owner_pid INTEGER",
        "ALTER TABLE runs ADD COLUMN owner_host VARCHAR",
        "ALTER TABLE runs ADD COLUMN owner_token VARCHAR",
        "ALTER TABLE runs ADD COLUMN heartbeat_at TIMESTAMP",
        "UPDATE runs SET status = 'interrupted', error = 'the process running it stopped', "
        "finished_at = coalesce(finished_at, now()::TIMESTAMP) "
        "WHERE status IN ('pending', 'running')",
    ],
    # 5: the evidence behind each verdict (the drop of every step, the worst
    # rewording of every pair, whether its denominator is the k floor, the prompt the model
    # read), the rows of a score table a run audited (so sweeps and calibration read every row,
    # not only those the audit reached), and named epsilon calibrations. Older runs get the
    # evidence recomputed from their stored steps; their prompts are unknown.
    5: [
        "ALTER TABLE run_steps ADD COLUMN prob_drop DOUBLE",
        "ALTER TABLE run_steps ADD COLUMN prompt VARCHAR",
        "UPDATE run_steps SET prob_drop = p_pre - p_post",
        "ALTER TABLE run_pairs ADD COLUMN worst_drop DOUBLE",
        "ALTER TABLE run_pairs ADD COLUMN amplified BOOLEAN",
        "ALTER TABLE run_pairs ADD COLUMN worst_stage INTEGER",
        "ALTER TABLE run_pairs ADD COLUMN worst_generator VARCHAR",
        "ALTER TABLE run_pairs ADD COLUMN worst_t INTEGER",
        "ALTER TABLE run_pairs ADD COLUMN worst_text VARCHAR",
        "ALTER TABLE run_pairs ADD COLUMN worst_p_pre DOUBLE",
        "ALTER TABLE run_pairs ADD COLUMN worst_p_post DOUBLE",
        "ALTER TABLE run_pairs ADD COLUMN worst_prompt VARCHAR",
        """UPDATE run_pairs SET amplified = run_pairs.gain <= coalesce(
                TRY_CAST(json_extract_string(runs.config, '$.k') AS DOUBLE), 0.001)
            FROM runs WHERE run_pairs.run_id = runs.run_id""",
        """UPDATE run_pairs SET worst_drop = w.p_pre - w.p_post, worst_stage = w.stage,
                worst_generator = w.generator, worst_t = w.t, worst_text = w.text,
                worst_p_pre = w.p_pre, worst_p_post = w.p_post
            FROM (SELECT run_id, pair_id,
                         arg_max(struct_pack(stage := stage, generator := generator, t := t,
                                             text := text, p_pre := p_pre, p_post := p_post),
                                 d) AS s
                  FROM run_steps GROUP BY run_id, pair_id) AS ws,
                 LATERAL (SELECT ws.s.stage AS stage, ws.s.generator AS generator, ws.s.t AS t,
                                 ws.s.text AS text, ws.s.p_pre AS p_pre,
                                 ws.s.p_post AS p_post) AS w
            WHERE run_pairs.run_id = ws.run_id AND run_pairs.pair_id = ws.pair_id""",
        """CREATE TABLE run_table_rows (
            run_id VARCHAR NOT NULL, row_number INTEGER NOT NULL, pair_id VARCHAR NOT NULL,
            role VARCHAR NOT NULL, generator VARCHAR, idx INTEGER, text VARCHAR,
            p_pre DOUBLE NOT NULL, p_post DOUBLE NOT NULL, PRIMARY KEY (run_id, row_number))""",
        """CREATE TABLE calibrations (
            name VARCHAR PRIMARY KEY, run_id VARCHAR NOT NULL, n INTEGER NOT NULL,
            percentiles JSON NOT NULL, provenance JSON, created_at TIMESTAMP NOT NULL)""",
    ],
    # 7: a benchmark's identity includes the digest of its content (pairs), so a
    # different content under a known id is stored under a new versioned id, never merged;
    # scores that arrive in an imported bundle are kept apart with their origin and feed a new
    # audit only when it asks (`--use-imported-scores`); an imported run names its bundle.
    7: [
        "ALTER TABLE benchmarks ADD COLUMN content_digest VARCHAR",
        """CREATE TABLE imported_scores (
            origin VARCHAR NOT NULL, fingerprint VARCHAR NOT NULL, prompt_hash VARCHAR NOT NULL,
            p_true DOUBLE NOT NULL, l_a_true_a DOUBLE, l_b_true_a DOUBLE, l_a_true_b DOUBLE,
            l_b_true_b DOUBLE, scored_at TIMESTAMP, imported_at TIMESTAMP NOT NULL,
            PRIMARY KEY (origin, fingerprint, prompt_hash))""",
        "ALTER TABLE runs ADD COLUMN imported_from JSON",
    ],
    # 8: the time a run actually ran, so the live view's elapsed time and rate leave
    # out the time it sat cancelled or interrupted: `resumed_at` is when this stretch of running
    # began (NULL while stopped) and `active_seconds` the total of the stretches before it.
    # Finished runs are credited their whole started-to-finished span (no better record).
    8: [
        "ALTER TABLE runs ADD COLUMN active_seconds DOUBLE DEFAULT 0",
        "ALTER TABLE runs ADD COLUMN resumed_at TIMESTAMP",
        "UPDATE runs SET active_seconds = coalesce(date_diff('millisecond', started_at, "
        "coalesce(finished_at, heartbeat_at, started_at)) / 1000.0, 0)",
    ],
    # 9: an auditor's labels on a scored rewording ("not meaning-preserving", or a
    # free note), with who made them and when. Append-only: a label is never edited, a later
    # one is added; a rewording labelled not meaning-preserving can be excluded into a new run.
    9: [
        """CREATE TABLE paraphrase_labels (
            label_id VARCHAR PRIMARY KEY, run_id VARCHAR NOT NULL, pair_id VARCHAR NOT NULL,
            stage INTEGER NOT NULL, generator VARCHAR NOT NULL, t INTEGER NOT NULL,
            text VARCHAR, label VARCHAR NOT NULL, note VARCHAR, author VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL)""",
        "CREATE INDEX paraphrase_labels_run ON paraphrase_labels (run_id, pair_id)",
    ],
    # 11: what a run's worker is doing right now (loading weights, registering a checkpoint,
    # scoring question i of n), since when, and how long each earlier step took, written by the
    # worker and read by any page polling the store (docs/dashboard.md, "The Step line").
    11: ["ALTER TABLE runs ADD COLUMN phase JSON"],
    # 12: what a bundle brings besides its scores is kept apart with its origin too, so no
    # local audit draws on it: its paraphrases (`imported_paraphrases`) and its checkpoint
    # registrations (`imported_checkpoints`; a local registration re-measures the label mass
    # and noise floor), and a benchmark no local import holds (`benchmarks.origin`).
    # Paraphrases stored by an earlier import say so in their provenance and move over; a
    # checkpoint row moves when only imported runs name its fingerprint (a local audit then
    # measures it again). Nothing is dropped; applied twice (a store rolled back by hand) it
    # changes nothing more.
    12: [
        """CREATE TABLE IF NOT EXISTS imported_paraphrases (
            origin VARCHAR NOT NULL, benchmark_id VARCHAR NOT NULL, pair_id VARCHAR NOT NULL,
            role VARCHAR NOT NULL, generator VARCHAR NOT NULL, idx INTEGER NOT NULL,
            text VARCHAR NOT NULL, provenance JSON, created_at TIMESTAMP NOT NULL,
            PRIMARY KEY (origin, benchmark_id, pair_id, role, generator, idx))""",
        """INSERT OR IGNORE INTO imported_paraphrases SELECT
                json_extract_string(provenance, '$.imported_from'), benchmark_id, pair_id, role,
                generator, idx, text, provenance, created_at
            FROM paraphrases WHERE json_extract_string(provenance, '$.imported_from') IS NOT NULL""",
        "DELETE FROM paraphrases "
        "WHERE json_extract_string(provenance, '$.imported_from') IS NOT NULL",
        """CREATE TABLE IF NOT EXISTS imported_checkpoints (
            origin VARCHAR NOT NULL, fingerprint VARCHAR NOT NULL, name VARCHAR, details JSON,
            registered_at TIMESTAMP, PRIMARY KEY (origin, fingerprint))""",
        """INSERT OR IGNORE INTO imported_checkpoints SELECT DISTINCT
                coalesce(json_extract_string(r.imported_from, '$.file'), 'a bundle')
                    || ' (run ' || r.run_id || ')', c.fingerprint, c.name, c.details,
                c.registered_at
            FROM checkpoints c JOIN runs r ON r.imported_from IS NOT NULL
                 AND c.fingerprint IN (r.pre_fingerprint, r.post_fingerprint)
            WHERE NOT EXISTS (SELECT 1 FROM runs l WHERE l.imported_from IS NULL
                  AND c.fingerprint IN (l.pre_fingerprint, l.post_fingerprint))""",
        "DELETE FROM checkpoints WHERE fingerprint IN (SELECT fingerprint FROM imported_checkpoints)",
        # a benchmark a bundle brought that this store did not hold: stored under its own id
        "ALTER TABLE benchmarks ADD COLUMN IF NOT EXISTS origin VARCHAR",
    ],
}
SCHEMA_VERSION = max(MIGRATIONS)
