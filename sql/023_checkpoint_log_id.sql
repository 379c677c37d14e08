-- Each checkpoint remembers which log it is a position in (EventLog's `<node>/log.id`). When a
-- node's directory holds a different log than the checkpoint's (the data directory was replaced
-- while the database was kept), the aggregator starts that node from the beginning of its log
-- instead of resuming at a position that belongs to another log; the dedup tables keep anything
-- already loaded from being loaded twice. NULL: written before log ids existed.
ALTER TABLE load_checkpoints ADD COLUMN IF NOT EXISTS log_id text;
