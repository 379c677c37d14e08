-- wrk script: POSTs request bodies with the headers the Detour SDKs send, rotating over several
-- bodies so the server sees varied events, and reports failed answers (`non2xx`: status 400 and
-- up, which wrk counts itself; neither server sends 1xx or 3xx) so a benchmark never reports a rate
-- of failures as throughput.
--
-- Environment:
--   WRK_BODY_FILES  body files separated by ':' (required); each connection cycles through them
--   WRK_KEY, WRK_APP  Authorization bearer key and X-App-ID
--   WRK_ENCODING    optional Content-Encoding header value
--   WRK_DELAY_MS    optional: wait this long after each answer before the next request on the
--                   connection (a rate-limited closed loop: about connections*1000/WRK_DELAY_MS req/s)
local files = {}
for path in string.gmatch(os.getenv("WRK_BODY_FILES") or "", "[^:]+") do table.insert(files, path) end
assert(#files > 0, "WRK_BODY_FILES is empty")

local headers = {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. (os.getenv("WRK_KEY") or "none"),
    ["X-App-ID"] = os.getenv("WRK_APP") or "bench",
    ["X-SDK"] = "ios/1.0.2",
}
local encoding = os.getenv("WRK_ENCODING")
if encoding and encoding ~= "" then headers["Content-Encoding"] = encoding end

local delay_ms = tonumber(os.getenv("WRK_DELAY_MS") or "")

local counter = 0
function setup(thread)
    counter = counter + 1
    thread:set("offset", counter * 7)
end

local requests = {}
local index = 0
function init(args)
    for i, path in ipairs(files) do
        local f = assert(io.open(path, "rb"))
        requests[i] = wrk.format("POST", nil, headers, f:read("*a"))
        f:close()
    end
    index = (offset or 0) % #requests
end

function request()
    index = index % #requests + 1
    return requests[index]
end

if delay_ms then
    function delay() return delay_ms end
end

function done(summary, latency, requests)
    local e = summary.errors
    -- wrk counts answers with a status above 399 itself (errors.status); a Lua response() hook
    -- would make it copy every answer's headers and body into Lua (docs/benchmarks.md, "wrk").
    local failures = e.status
    io.write(string.format(
        "RESULT requests=%d duration_us=%d non2xx=%d socket_errors=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d\n",
        summary.requests, summary.duration, failures, e.connect + e.read + e.write + e.timeout,
        latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
