-- slot_hold_min.lua - the hold a user would write: an idempotency hash, a fallback over the
-- shards, an expiry sorted set. Keys as slot_hold.lua's, which does the rest (create, get_hold,
-- expire, check). EVALSHA <sha> 1 slot:<event> hold <user> <request> <qty> <rnd>
local P, user, req, qty, rnd = KEYS[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local id = redis.call('HGET', P .. ':req', user .. '\0' .. req)
if id then -- a replay: the first answer again
  local h = redis.call('HMGET', P .. ':h:' .. id, 'status', 'qty', 'expires')
  return { h[1], id, tonumber(h[2]), tonumber(h[3]), 1 }
end
local e = redis.call('HMGET', P .. ':ev', 'shards', 'ttl', 'capacity', 'held', 'confirmed')
local avail = e[3] - e[4] - e[5]
if avail < qty then return { 'sold_out', avail } end
local parts, need = {}, qty
for i = 0, e[1] - 1 do
  local s = (rnd + i) % e[1]
  local n = math.min(tonumber(redis.call('HGET', P .. ':free', s)), need)
  if n > 0 then redis.call('HINCRBY', P .. ':free', s, -n); parts[#parts + 1] = s .. ':' .. n; need = need - n end
  if need == 0 then break end
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
id = string.format('%x-%x', redis.call('HINCRBY', P .. ':ev', 'seq', 1), math.floor(rnd / 65536) % 2147483647)
redis.call('HSET', P .. ':h:' .. id, 'user', user, 'request', req, 'qty', qty, 'status', 'held', 'created', now,
  'expires', now + e[2], 'parts', table.concat(parts, ','))
redis.call('HSET', P .. ':req', user .. '\0' .. req, id)
redis.call('ZADD', P .. ':exp', now + e[2], id)
redis.call('RPUSH', P .. ':ids', id) -- for check
redis.call('HINCRBY', P .. ':ev', 'held', qty)
return { 'held', id, qty, now + e[2], 0 }
