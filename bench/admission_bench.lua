-- wrk script: POST one AdmissionReview body (file named by BENCH_BODY) per request.
local path = os.getenv("BENCH_BODY")
local f = assert(io.open(path, "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
