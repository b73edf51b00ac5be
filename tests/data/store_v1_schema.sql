-- The result store as written before the per-flow table (schema 1), for the migration test.
CREATE TABLE IF NOT EXISTS runs (
    run_key      TEXT PRIMARY KEY,  -- stable hash of everything that defines the run
    campaign     TEXT NOT NULL,     -- campaign name, or '' for single runs and sweeps
    experiment   TEXT NOT NULL,     -- 'throughput' or 'fairness'
    sweep        TEXT NOT NULL,     -- the sweep this run belongs to ('' if none)
    param        TEXT NOT NULL,     -- swept parameter ('' if none)
    value        TEXT NOT NULL,     -- its value as written ('' if none)
    value_num    REAL,              -- its value as a number, for plotting
    stack        TEXT NOT NULL,     -- 'aioquic', or per flow 'dc=aioquic,sc1=tcp,sc2=tcp'
    cc           TEXT NOT NULL,
    host_config  TEXT NOT NULL,     -- 'quic-default', 'quic-large' or 'tcp'
    rep          INTEGER NOT NULL,
    size         INTEGER,           -- bytes per download
    duration_s   REAL,              -- fairness measurement window
    ok           INTEGER NOT NULL,
    error        TEXT,
    goodput_mbps REAL,              -- throughput
    jfi          REAL,              -- fairness: Jain's index over the flows' means
    dc_mbps      REAL,
    sc1_mbps     REAL,
    sc2_mbps     REAL,
    scenario     TEXT NOT NULL,     -- JSON of the scenario model
    metrics      TEXT NOT NULL,     -- JSON of every metric of the run
    environment  TEXT NOT NULL,     -- JSON: kernel, host settings, versions, commit
    run_dir      TEXT NOT NULL,     -- raw data of the run
    machine      TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    finished_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_sweep ON runs (campaign, experiment, sweep, param);
