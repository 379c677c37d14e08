-- 068_funnel_distinct_events: a funnel step that repeats an earlier event step's name is satisfied
-- only by a different event.
--
-- reports.md: "A device converts through step k when it performed steps 1..k in order, each
-- step's time at or after the previous one". 051's report_funnel_times took, for each later step,
-- the earliest event of the step's name at or after the previous step's time, with nothing saying
-- it must be another event than the earlier steps': an app funnel app_open -> app_open converted
-- 100% with a median of 0 s on devices with a single app_open (the same event counted twice).
--
-- The rule now: every event step is satisfied by its own event, one no earlier event step of the
-- funnel used (equal times are fine for distinct events). Step 1, when it is an event name, is the
-- earliest event of that name at p_start (the entry time), ties by event_id; each later event step
-- takes the earliest unused event of its name at or after the previous step's time, ties by
-- event_id. Taking the earliest each time is as good as any other choice: it leaves the later steps
-- every event another choice would. 'install' is derived (the device's first event, of any kind),
-- not an event: it uses no event, so the default funnel click -> install -> app_open is unchanged
-- (the install's own app_open satisfies the app_open step); 'click' is step 1's click.
--
-- Cost: only steps whose name occurs at another event step of the funnel track event ids (an
-- ORDER BY ... LIMIT 1 probe of the same index, events_app_device_time, instead of min()); a funnel
-- with distinct step names (the default funnel and almost every app funnel) runs the same queries
-- as before. rollup_refresh_day (053) and rebuild_rollups (054, through rollup_refresh_day_rollups)
-- call this function by name, so the incremental pass and the rebuild both use it.
CREATE OR REPLACE FUNCTION report_funnel_times(p_app text, p_device text, p_install_at timestamptz,
    p_start timestamptz, p_steps text[], p_deadline timestamptz)
RETURNS timestamptz[]
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    times timestamptz[] := ARRAY[p_start];
    previous timestamptz := p_start;
    steps integer := cardinality(p_steps);
    next_time timestamptz;
    next_id text;
    -- event ids taken by earlier event steps whose name occurs again in the funnel
    used text[] := '{}';
BEGIN
    IF p_device IS NULL THEN
        RETURN times;
    END IF;
    IF p_steps[1] NOT IN ('click', 'install') AND p_steps[1] = ANY (p_steps[2:steps]) THEN
        SELECT e.event_id INTO next_id FROM events e
        WHERE e.app_id = p_app AND e.device_id = p_device AND e.name = p_steps[1] AND e.event_time = p_start
        ORDER BY e.event_id LIMIT 1;
        IF next_id IS NOT NULL THEN
            used := used || next_id;
        END IF;
    END IF;
    FOR i IN 2 .. steps LOOP
        IF p_steps[i] = 'install' THEN
            next_time := CASE WHEN p_install_at >= previous AND p_install_at <= p_deadline THEN p_install_at END;
        ELSIF p_steps[i] = ANY (p_steps[1:i - 1]) OR p_steps[i] = ANY (p_steps[i + 1:steps]) THEN
            -- The name occurs at another step: take an event no earlier step took, and note it.
            next_time := NULL;
            SELECT e.event_time, e.event_id INTO next_time, next_id FROM events e
            WHERE e.app_id = p_app AND e.device_id = p_device AND e.name = p_steps[i]
              AND e.event_time >= previous AND e.event_time <= p_deadline AND NOT (e.event_id = ANY (used))
            ORDER BY e.event_time, e.event_id LIMIT 1;
            IF next_time IS NOT NULL THEN
                used := used || next_id;
            END IF;
        ELSE
            SELECT min(e.event_time) INTO next_time FROM events e
            WHERE e.app_id = p_app AND e.device_id = p_device AND e.name = p_steps[i]
              AND e.event_time >= previous AND e.event_time <= p_deadline;
        END IF;
        EXIT WHEN next_time IS NULL;
        times := times || next_time;
        previous := next_time;
    END LOOP;
    RETURN times;
END
$fn$;
