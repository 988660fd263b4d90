--[[
slot_hold.lua - the Redis peer of slotd's hold semantics (docs/protocol.md), so
slot-bench can run the same scenario against Redis (--target redis://).
slot-bench loads it with SCRIPT LOAD and calls one op per EVALSHA:

  EVALSHA <sha> 1 slot:<event> <op> <args...>

The event's keys (KEYS[1] is the prefix "slot:<event>"):
  :ev     hash  capacity shards held confirmed ttl max_per_user max_per_request status seq
  :free   hash  shard number -> free units
  :req    hash  user NUL request -> hold id        idempotency per (user, request key)
  :exp    zset  hold id, scored by expires_at ms   expiry; the sweeper and the hold path use it
  :users  hash  user -> held + confirmed units     only when max_per_user > 0
  :ids    list  every hold id                      for check
  :h:<id> hash  user request qty status created expires parts ("shard:qty,...")

Ops and replies (errors are error replies "<code> <message>", codes from docs/protocol.md):
  create capacity shards ttl_ms max_per_user max_per_request -> {status, capacity, available, held, confirmed, shards, replay}
  event                                      -> the same view
  hold user request qty rnd                  -> {"held", id, qty, expires_at, replay} | {"sold_out", available}
  confirm id user                            -> {"confirmed", id, qty, replay}; hold_not_active "<status>"
  release id user                            -> {status, released 0|1}
  get_hold id user                           -> {status, id, qty, expires_at, created_at}
  expire limit                               -> number of holds expired (the sweeper)
  check                                      -> {events, holds, violations, "detail; ..."}

The rules follow slotd's: a random start shard then the others in turn; a
hold that is past expires_at counts as expired everywhere (lazily); before
sold_out or user_limit the event's due holds are expired in the same call.
Time is the server's (TIME). The random numbers (start shard, hold id tag)
come from the caller, so the script writes the same thing wherever it runs.
--]]

local P = KEYS[1]
local EV, FREE, REQ, EXP, USERS, IDS = P .. ':ev', P .. ':free', P .. ':req', P .. ':exp', P .. ':users', P .. ':ids'
local EXPIRE_IN_CALL_MAX = 100000 -- due holds a hold call expires before answering sold_out

local function fail(code, msg)
  return redis.error_reply(code .. ' ' .. msg)
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function hkey(id)
  return P .. ':h:' .. id
end

local function ev_load()
  local v = redis.call('HMGET', EV, 'capacity', 'shards', 'held', 'confirmed', 'ttl', 'max_per_user',
    'max_per_request', 'status')
  if not v[1] then
    return nil
  end
  return { capacity = tonumber(v[1]), shards = tonumber(v[2]), held = tonumber(v[3]), confirmed = tonumber(v[4]),
    ttl = tonumber(v[5]), max_per_user = tonumber(v[6]), max_per_request = tonumber(v[7]), status = v[8] }
end

local function view(e, replay)
  return { e.status, e.capacity, e.capacity - e.held - e.confirmed, e.held, e.confirmed, e.shards, replay }
end

local function hold_load(id)
  local v = redis.call('HMGET', hkey(id), 'user', 'qty', 'status', 'expires', 'parts', 'created')
  if not v[1] then
    return nil
  end
  return { user = v[1], qty = tonumber(v[2]), status = v[3], expires = tonumber(v[4]), parts = v[5],
    created = tonumber(v[6]) }
end

-- held -> released | expired: units back to the shards they came from, out of
-- the expiry index, off the event's and the user's counts. Exactly once: the
-- callers only come here for a hold whose status is still 'held'.
local function end_hold(id, h, status, e)
  for s, q in string.gmatch(h.parts, '(%d+):(%d+)') do
    redis.call('HINCRBY', FREE, s, tonumber(q))
  end
  redis.call('HSET', hkey(id), 'status', status)
  redis.call('ZREM', EXP, id)
  redis.call('HINCRBY', EV, 'held', -h.qty)
  if e.max_per_user > 0 and redis.call('HINCRBY', USERS, h.user, -h.qty) <= 0 then
    redis.call('HDEL', USERS, h.user)
  end
end

local function expire_due(e, now, limit)
  local ids = redis.call('ZRANGEBYSCORE', EXP, '-inf', now, 'LIMIT', 0, limit)
  for _, id in ipairs(ids) do
    local h = hold_load(id)
    if h and h.status == 'held' then
      end_hold(id, h, 'expired', e)
    else
      redis.call('ZREM', EXP, id)
    end
  end
  return #ids
end

local function op_create(capacity, shards, ttl, mpu, mpr)
  local e = ev_load()
  if e then
    if e.capacity == capacity and e.shards == shards and e.ttl == ttl and e.max_per_user == mpu
        and e.max_per_request == mpr then
      return view(e, 1)
    end
    return fail('event_exists', 'the event exists with different settings')
  end
  redis.call('HSET', EV, 'capacity', capacity, 'shards', shards, 'held', 0, 'confirmed', 0, 'ttl', ttl,
    'max_per_user', mpu, 'max_per_request', mpr, 'status', 'on_sale', 'seq', 0)
  local base, rest = math.floor(capacity / shards), capacity % shards
  for s = 0, shards - 1 do
    redis.call('HSET', FREE, s, base + (s < rest and 1 or 0))
  end
  return view(ev_load(), 0)
end

-- Take qty units: random start shard, then the others in turn. Returns the parts, or nil.
local function take(e, qty, rnd)
  local start, parts, need = rnd % e.shards, {}, qty
  for i = 0, e.shards - 1 do
    if need == 0 then
      break
    end
    local s = (start + i) % e.shards
    local f = tonumber(redis.call('HGET', FREE, s) or '0')
    if f > 0 then
      local n = math.min(f, need)
      redis.call('HINCRBY', FREE, s, -n)
      parts[#parts + 1] = s .. ':' .. n
      need = need - n
    end
  end
  if need > 0 then
    return nil
  end
  return table.concat(parts, ',')
end

-- user_limit and sold_out, after expiring the event's due holds when that could change the answer.
local function admit(e, user, qty, now)
  local settled, uq = false, 0
  if e.max_per_user > 0 then
    uq = tonumber(redis.call('HGET', USERS, user) or '0')
    if uq + qty > e.max_per_user then
      settled = true
      expire_due(e, now, EXPIRE_IN_CALL_MAX)
      e = ev_load()
      uq = tonumber(redis.call('HGET', USERS, user) or '0')
      if uq + qty > e.max_per_user then
        return e, fail('user_limit', 'user has ' .. uq .. ' of max_per_user ' .. e.max_per_user)
      end
    end
  end
  if e.capacity - e.held - e.confirmed < qty and not settled then
    expire_due(e, now, EXPIRE_IN_CALL_MAX)
    e = ev_load()
  end
  local avail = e.capacity - e.held - e.confirmed
  if avail < qty then
    return e, { 'sold_out', avail }
  end
  return e, nil
end

local function op_hold(user, request, qty, rnd)
  local e = ev_load()
  if not e then
    return fail('unknown_event', 'no such event')
  end
  local rkey = user .. '\0' .. request
  local id = redis.call('HGET', REQ, rkey)
  if id then
    local h = hold_load(id)
    if h.qty ~= qty then
      return fail('idempotency_conflict', 'this request key was used with a different qty')
    end
    local st = (h.status == 'held' and now_ms() >= h.expires) and 'expired' or h.status
    return { st, id, h.qty, h.expires, 1 }
  end
  if qty > e.max_per_request then
    return fail('invalid_argument', 'qty: above the event\'s max_per_request ' .. e.max_per_request)
  end
  if e.status ~= 'on_sale' then
    return fail('not_on_sale', 'the event is closed')
  end
  local now = now_ms()
  local answer
  e, answer = admit(e, user, qty, now)
  if answer then
    return answer
  end
  local parts = take(e, qty, rnd)
  if not parts then
    return fail('internal', 'the shards held fewer units than the counters said')
  end
  local seq = redis.call('HINCRBY', EV, 'seq', 1)
  id = string.format('%x-%x', seq, math.floor(rnd / 65536) % 2147483647)
  local exp = now + e.ttl
  redis.call('HSET', hkey(id), 'user', user, 'request', request, 'qty', qty, 'status', 'held', 'created', now,
    'expires', exp, 'parts', parts)
  redis.call('HSET', REQ, rkey, id)
  redis.call('ZADD', EXP, exp, id)
  redis.call('RPUSH', IDS, id)
  redis.call('HINCRBY', EV, 'held', qty)
  if e.max_per_user > 0 then
    redis.call('HINCRBY', USERS, user, qty)
  end
  return { 'held', id, qty, exp, 0 }
end

-- The hold of this user, or an error reply.
local function own_hold(id, user)
  local e = ev_load()
  if not e then
    return nil, nil, fail('unknown_event', 'no such event')
  end
  local h = hold_load(id)
  if not h or h.user ~= user then
    return nil, nil, fail('unknown_hold', 'no such hold for this user')
  end
  return e, h, nil
end

local function op_confirm(id, user)
  local e, h, err = own_hold(id, user)
  if err then
    return err
  end
  if h.status == 'held' and now_ms() >= h.expires then
    end_hold(id, h, 'expired', e)
    return fail('hold_not_active', 'expired')
  end
  if h.status == 'confirmed' then
    return { 'confirmed', id, h.qty, 1 }
  end
  if h.status ~= 'held' then
    return fail('hold_not_active', h.status)
  end
  redis.call('HSET', hkey(id), 'status', 'confirmed')
  redis.call('ZREM', EXP, id)
  redis.call('HINCRBY', EV, 'held', -h.qty)
  redis.call('HINCRBY', EV, 'confirmed', h.qty)
  return { 'confirmed', id, h.qty, 0 }
end

local function op_release(id, user)
  local e, h, err = own_hold(id, user)
  if err then
    return err
  end
  if h.status ~= 'held' then
    return { h.status, 0 }
  end
  if now_ms() >= h.expires then
    end_hold(id, h, 'expired', e)
    return { 'expired', 0 }
  end
  end_hold(id, h, 'released', e)
  return { 'released', 1 }
end

local function op_get_hold(id, user)
  local _, h, err = own_hold(id, user)
  if err then
    return err
  end
  local st = (h.status == 'held' and now_ms() >= h.expires) and 'expired' or h.status
  return { st, id, h.qty, h.expires, h.created }
end

-- The invariants of docs/protocol.md that the stored state can show (1-4, and the expiry index).
local function op_check()
  local e = ev_load()
  if not e then
    return fail('unknown_event', 'no such event')
  end
  local detail, nv = {}, 0
  local function bad(msg)
    nv = nv + 1
    if #detail < 10 then
      detail[#detail + 1] = msg
    end
  end
  local free, fr = 0, redis.call('HGETALL', FREE)
  for i = 2, #fr, 2 do
    local f = tonumber(fr[i])
    if f < 0 then
      bad('1: shard ' .. fr[i - 1] .. ' has ' .. f .. ' free')
    end
    free = free + f
  end
  if free + e.held + e.confirmed ~= e.capacity then
    bad('1: free ' .. free .. ' + held ' .. e.held .. ' + confirmed ' .. e.confirmed .. ' is not capacity ' .. e.capacity)
  end
  local held, confirmed, users = 0, 0, {}
  local ids = redis.call('LRANGE', IDS, 0, -1)
  for _, id in ipairs(ids) do
    local h, sum = hold_load(id), 0
    for _, q in string.gmatch(h.parts, '(%d+):(%d+)') do
      sum = sum + tonumber(q)
    end
    if sum ~= h.qty then
      bad('3: hold ' .. id .. ' parts add up to ' .. sum .. ', qty ' .. h.qty)
    end
    if h.status == 'held' or h.status == 'confirmed' then
      users[h.user] = (users[h.user] or 0) + h.qty
    end
    if h.status == 'held' then
      held = held + h.qty
      if not redis.call('ZSCORE', EXP, id) then
        bad('expiry index: held hold ' .. id .. ' is missing')
      end
    elseif h.status == 'confirmed' then
      confirmed = confirmed + h.qty
    end
  end
  if held ~= e.held or confirmed ~= e.confirmed then
    bad('2: holds add up to held ' .. held .. ', confirmed ' .. confirmed .. '; the event says ' .. e.held .. ', ' .. e.confirmed)
  end
  if e.max_per_user > 0 then
    for u, q in pairs(users) do
      if q > e.max_per_user then
        bad('4: user ' .. u .. ' has ' .. q .. ' of max_per_user ' .. e.max_per_user)
      end
      local rec = tonumber(redis.call('HGET', USERS, u) or '0')
      if rec ~= q then
        bad('users index: ' .. u .. ' says ' .. rec .. ', the holds ' .. q)
      end
    end
  end
  return { 1, #ids, nv, table.concat(detail, '; ') }
end

local op = ARGV[1]
if op == 'hold' then
  return op_hold(ARGV[2], ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]))
elseif op == 'confirm' then
  return op_confirm(ARGV[2], ARGV[3])
elseif op == 'release' then
  return op_release(ARGV[2], ARGV[3])
elseif op == 'get_hold' then
  return op_get_hold(ARGV[2], ARGV[3])
elseif op == 'event' then
  local e = ev_load()
  if not e then
    return fail('unknown_event', 'no such event')
  end
  return view(e, 0)
elseif op == 'create' then
  return op_create(tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]))
elseif op == 'expire' then
  local e = ev_load()
  if not e then
    return fail('unknown_event', 'no such event')
  end
  return expire_due(e, now_ms(), tonumber(ARGV[2]))
elseif op == 'check' then
  return op_check()
end
return fail('unknown_op', 'op missing or not known: ' .. tostring(op))
