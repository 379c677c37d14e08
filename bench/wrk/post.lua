-- wrk script: POSTs the body in $WRK_BODY_FILE with the headers the Detour SDKs send.
-- Counts non-2xx answers so a benchmark never reports a rate of failures as throughput.
local body_file = os.getenv("WRK_BODY_FILE")
local f = assert(io.open(body_file, "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("WRK_KEY") or "none")
wrk.headers["X-App-ID"] = os.getenv("WRK_APP") or "bench"
wrk.headers["X-SDK"] = "ios/1.0.2"
local encoding = os.getenv("WRK_ENCODING")
if encoding and encoding ~= "" then wrk.headers["Content-Encoding"] = encoding end

local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0 end
function response(status, headers, body)
    if status < 200 or status > 299 then bad = bad + 1 end
end
function done(summary, latency, requests)
    local failures = 0
    for _, t in ipairs(threads) do failures = failures + t:get("bad") end
    io.write(string.format("RESULT requests=%d duration_us=%d non2xx=%d p50_us=%d p90_us=%d p99_us=%d\n",
        summary.requests, summary.duration, failures,
        latency:percentile(50), latency:percentile(90), latency:percentile(99)))
end
