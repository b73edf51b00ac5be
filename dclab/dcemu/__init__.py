"""dcemu's one Python face, opposite emu/src/config/schema.rs (what it reads) and
emu/src/engine/record.rs (what it writes): the scenario file of a run (``config.py``), the
typed records (``records.py``), the real-time process and how it runs (``process.py``,
``mode.py``), and ``dcemu sim``'s workload, call and summary (``sim.py``) with what it
models per stack (``sim_models.py``)."""
