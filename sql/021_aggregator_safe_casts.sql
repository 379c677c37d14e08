-- 021_aggregator_safe_casts: a fallback cast for payloads jsonb refuses.
--
-- The loader casts events.data / events.metadata with ::jsonb. A payload that the ingest scanner
-- accepted but jsonb refuses (for example a lone UTF-16 surrogate escape such as "\ud800") would fail
-- the whole batch on every retry. When a batch fails with a data exception (SQLSTATE class 22), the
-- loader runs it again with this function instead: valid JSON is stored as is, anything else as
-- {"_invalid_json": "<the text as received>"}, so nothing is lost and loading goes on. It runs a
-- subtransaction per row, which is why it is only the fallback.
CREATE OR REPLACE FUNCTION aggregator_try_jsonb(p_text text)
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE
AS $fn$
BEGIN
    RETURN p_text::jsonb;
EXCEPTION WHEN others THEN
    RETURN jsonb_build_object('_invalid_json', p_text);
END
$fn$;
