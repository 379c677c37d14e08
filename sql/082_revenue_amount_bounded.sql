-- 082_revenue_amount_bounded: an absurd revenue amount adds no revenue instead of stopping every
-- app's rollups.
--
-- Ingest keeps the numbers of `data` as written, whatever their size, and jsonb holds any numeric.
-- So a `purchase` with `"revenue": 9e131071` was accepted and loaded, and the rollup pass then
-- summed two of them past numeric's range (22003: value overflows numeric format). A numeric
-- string of 200,000 digits, or with 20,000 after the point, failed the cast itself. The pass rolls
-- back whole, so from then on no app's rollups moved: every load was followed by the same failure,
-- and every report stayed at the day before, until someone deleted the event by hand. One
-- publishable key (shipped inside every copy of an app) was enough. Found by the forty-fourth
-- session's audit of the ingest path; IncrementalTests.absurdRevenue.
--
-- Now an amount whose absolute value is 10^255 or more is not usable, like a missing one: the
-- action still counts as an event and adds no revenue. Smaller amounts are still summed exactly,
-- whatever their size (ReportsTests.EndpointTests.totalsOfLargeAmounts: 10^39 and 10^-31), and
-- no count of them can reach numeric's 131,072 digits. A numeric string may have at most 255
-- digits either side of the point (longer is not usable either), so its cast cannot fail. The blanks around a
-- numeric string are ASCII ones only: in a UTF-8 database the regex's \s also matched U+2003,
-- U+2028, U+3000 and other Unicode spaces, which trim() and the cast do not skip, so
-- `"revenue":"\u20035"` failed the pass the same way (22P02; found by a second audit the same
-- session). The function runs on every event of an attributed device's day, whatever its name:
-- the sum's CASE is computed per row before the name is checked. The body stays one CASE on
-- p_data, which PostgreSQL inlines into the day's statement.
CREATE OR REPLACE FUNCTION report_revenue_amount(p_data jsonb) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT CASE
        WHEN jsonb_typeof(p_data) <> 'object' THEN NULL
        WHEN jsonb_typeof(p_data -> 'revenue') = 'number' THEN
            CASE WHEN abs((p_data ->> 'revenue')::numeric) < 1e255 THEN (p_data ->> 'revenue')::numeric END
        WHEN jsonb_typeof(p_data -> 'revenue') = 'string'
            AND p_data ->> 'revenue' ~ '^[ \t\n\r\f\v]*-?[0-9]{1,255}(\.[0-9]{1,255})?[ \t\n\r\f\v]*$' THEN
            CASE WHEN abs(trim(p_data ->> 'revenue')::numeric) < 1e255 THEN trim(p_data ->> 'revenue')::numeric END
        WHEN jsonb_typeof(p_data -> 'value') = 'number' THEN
            CASE WHEN abs((p_data ->> 'value')::numeric) < 1e255 THEN (p_data ->> 'value')::numeric END
        WHEN jsonb_typeof(p_data -> 'value') = 'string'
            AND p_data ->> 'value' ~ '^[ \t\n\r\f\v]*-?[0-9]{1,255}(\.[0-9]{1,255})?[ \t\n\r\f\v]*$' THEN
            CASE WHEN abs(trim(p_data ->> 'value')::numeric) < 1e255 THEN trim(p_data ->> 'value')::numeric END
    END
$fn$;
