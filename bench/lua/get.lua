-- GET /v1/subscribers/{id} for seeded people user_000000 … (PEOPLE-1). Args: PEOPLE SECRET_KEY.
function init(args)
  people = tonumber(args[1])
  headers = { ["Authorization"] = "Bearer " .. args[2] }
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 1000)
end
function request()
  return wrk.format("GET", string.format("/v1/subscribers/user_%06d", math.random(0, people - 1)), headers)
end
