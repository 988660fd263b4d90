// Types of slotd-client (src/index.js). The fields are those of docs/protocol.md; replies may
// carry more fields than listed (the protocol grows by adding fields), hence the index
// signatures.

/** Any reply object of slotd. */
export interface Reply {
  ok: boolean;
  id?: string | number;
  [field: string]: unknown;
}

/** An `ok:false` reply: the shape of {@link SlotError.reply}. */
export interface ErrorReply extends Reply {
  ok: false;
  /** the protocol's error code (closed set; docs/protocol.md, "Error codes") */
  error: string;
  message?: string;
  /** not_primary, wrong_set: where the primary listens ("H:P"), when known */
  primary?: string;
  /** moving, rate_limited: how long to wait */
  retry_after_ms?: number;
  /** true on the client's own verdicts (gave up, refused before sending) */
  client?: boolean;
  /** true when the client gave up after its tries */
  gave_up?: boolean;
  /** true when the outcome is unknown and the op was not resent (extend) */
  outcome_unknown?: boolean;
}

/** Options of {@link connect}. */
export interface ConnectOptions {
  /** "HOST:PORT" addresses in order (a replica set's members); default "127.0.0.1:7420" */
  hosts?: string[] | string;
  /** sent in `hello` on every connection the client opens (with --token-file) */
  token?: string;
  /** per try: connect, hello and each reply, in ms (default 5000) */
  timeoutMs?: number;
  /** resends per call after its first try (default 8) */
  retries?: number;
  /** unanswered requests per connection (default 1024, slotd's --max-inflight) */
  maxInFlight?: number;
  /** calls waiting for an in-flight slot per connection before calls are refused `overloaded` (default 65536) */
  maxQueued?: number;
  /** longest request line in bytes (default 65536, slotd's --max-line); longer is refused `line_too_long` */
  maxLineBytes?: number;
  /** longest reply line in bytes (default 16 MiB) */
  maxReplyBytes?: number;
}

/** Per-call options: they override the client's. */
export interface CallOptions {
  timeoutMs?: number;
  retries?: number;
}

/** The bounds the client keeps (see LIMITS in src/index.js). */
export declare const LIMITS: Readonly<{
  maxLineBytes: number;
  maxReplyBytes: number;
  maxInFlight: number;
  maxQueued: number;
  backoffMinMs: number;
  backoffMaxMs: number;
  maxRetryAfterMs: number;
}>;

/** Method name -> wire op name, for the 32 ops of protocol version 1. */
export declare const OPS: Readonly<Record<string, string>>;

/** A fresh idempotency key (a random UUID). */
export declare function newRequestKey(): string;

/** A rejected call: an `ok:false` reply, or the client's own verdict in that shape. */
export declare class SlotError extends Error {
  constructor(reply: ErrorReply, info?: { request?: string; host?: string });
  /** the protocol's error code, e.g. 'invalid_argument', 'unknown_hold', 'unavailable' */
  readonly code: string;
  /** the whole error reply */
  readonly reply: ErrorReply;
  /** the `request` key the call used: keep it to retry the purchase later */
  request?: string;
  /** the host of the last try */
  host?: string;
}

export interface HoldArgs {
  event: string;
  user: string;
  qty: number;
  /** the idempotency key; generated per call when left out */
  request?: string;
  [field: string]: unknown;
}
export interface HoldReply extends Reply {
  ok: true;
  /** 'held', 'sold_out' (an outcome, not an error), or a replay's current status */
  status: 'held' | 'sold_out' | 'confirmed' | 'released' | 'expired' | 'cancelled' | string;
  hold?: string;
  qty?: number;
  expires_at?: number;
  /** sold_out: the units free across all shards */
  available?: number;
  replay?: boolean;
}
export interface HoldRef {
  event: string;
  hold: string;
  user: string;
  [field: string]: unknown;
}
export interface ConfirmArgs extends HoldRef {
  qty?: number;
  reacquire?: boolean;
}
export interface ConfirmReply extends Reply {
  ok: true;
  status: string;
  hold: string;
  qty: number;
  returned?: number;
  replay?: boolean;
}
export interface ReleaseReply extends Reply {
  ok: true;
  released: boolean;
  status: string;
}
export interface ExtendArgs extends HoldRef {
  by_ms: number;
}
export interface HoldView extends Reply {
  ok: true;
  hold: string;
  user: string;
  status: string;
  qty: number;
  expires_at: number;
  created_at: number;
}
export interface EventView extends Reply {
  ok: true;
  event: string;
  status: 'on_sale' | 'closed' | string;
  capacity: number;
  available: number;
  held: number;
  confirmed: number;
  shards: number;
  hold_ttl_ms: number;
  max_per_user: number;
  max_per_request: number;
  opens_at?: number;
  closes_at?: number;
  max_extensions?: number;
  max_hold_ms?: number;
  replay?: boolean;
}
export interface CreateEventArgs {
  event: string;
  capacity: number;
  shards?: number;
  hold_ttl_ms?: number;
  max_per_user?: number;
  max_per_request?: number;
  opens_at?: number;
  closes_at?: number;
  max_extensions?: number;
  max_hold_ms?: number;
  waitlist_max?: number;
  [field: string]: unknown;
}
export type Fields = Record<string, unknown>;

/** One feed entry (docs/protocol.md, "Feed"), with `ack()` storing the position up to it. */
export interface FeedEntry {
  /** the entry's seq */
  feed: number;
  type: string;
  at: number;
  event?: string;
  hold?: string;
  user?: string;
  qty?: number;
  [field: string]: unknown;
  /** stores this entry's seq as the consumer's position (durably; resolves after the commit) */
  ack(): Promise<Reply>;
}
export interface FeedOptions {
  consumer: string;
  /** 'acked' (default: after the stored position), 'start', or a seq >= 1 (0 means 'start') */
  from?: 'acked' | 'start' | number;
  /** entries pushed past the last ack, 1..10000 (default 1000) */
  window?: number;
}
/** The async iterator of {@link Client.feed}. */
export interface Feed extends AsyncIterableIterator<FeedEntry> {
  /** the newest seq when the last subscribe was answered */
  readonly head: number;
  /** unsubscribes and closes the feed's connection */
  close(): Promise<void>;
}

/** A client of a standalone slotd or a replica set. */
export declare class Client {
  constructor(opts: ConnectOptions);
  /** the hosts in order (a primary named by a reply is added) */
  readonly hosts: string[];
  /** where requests go now */
  readonly currentHost: string;
  /** any op by its wire name, with the retry rule */
  request(op: string, fields?: Fields, opts?: CallOptions): Promise<Reply>;
  hello(fields?: { token?: string }, opts?: CallOptions): Promise<Reply>;
  hold(args: HoldArgs, opts?: CallOptions): Promise<HoldReply>;
  confirm(args: ConfirmArgs, opts?: CallOptions): Promise<ConfirmReply>;
  extend(args: ExtendArgs, opts?: CallOptions): Promise<Reply & { ok: true; expires_at: number }>;
  release(args: HoldRef, opts?: CallOptions): Promise<ReleaseReply>;
  getHold(args: { event: string; hold: string; user?: string }, opts?: CallOptions): Promise<HoldView>;
  event(args: { event: string }, opts?: CallOptions): Promise<EventView>;
  createEvent(args: CreateEventArgs, opts?: CallOptions): Promise<EventView>;
  setCapacity(args: { event: string; capacity: number }, opts?: CallOptions): Promise<EventView>;
  reshard(args: { event: string; shards: number }, opts?: CallOptions): Promise<EventView>;
  setStatus(args: { event: string; status: 'on_sale' | 'closed' }, opts?: CallOptions): Promise<EventView>;
  setSaleWindow(args: { event: string; opens_at: number; closes_at: number }, opts?: CallOptions): Promise<EventView>;
  cancel(args: { event: string; hold: string }, opts?: CallOptions): Promise<Reply & { cancelled: boolean; status: string }>;
  shards(args: { event: string }, opts?: CallOptions): Promise<Reply & { shards: { shard: number; free: number }[] }>;
  check(args?: { event?: string }, opts?: CallOptions): Promise<Reply & { violations: unknown[]; violations_total: number }>;
  expire(args?: Fields, opts?: CallOptions): Promise<Reply & { expired: number }>;
  stats(args?: Fields, opts?: CallOptions): Promise<Reply>;
  digest(args?: Fields, opts?: CallOptions): Promise<Reply & { seq: number; digest: string }>;
  holdMany(args: { user: string; request?: string; items: { event: string; qty: number }[] }, opts?: CallOptions): Promise<Reply>;
  waitlistJoin(args: HoldArgs, opts?: CallOptions): Promise<Reply>;
  waitlistLeave(args: { event: string; user: string; request: string }, opts?: CallOptions): Promise<Reply>;
  waitlist(args: { event: string; user: string; request: string }, opts?: CallOptions): Promise<Reply>;
  waitlistEntries(args: { event: string; limit?: number }, opts?: CallOptions): Promise<Reply>;
  /** refused: a subscription belongs to a connection of its own; use {@link Client.feed} */
  subscribe(args?: Fields, opts?: CallOptions): Promise<never>;
  ack(args: { consumer: string; seq: number }, opts?: CallOptions): Promise<Reply>;
  unsubscribe(args?: Fields, opts?: CallOptions): Promise<Reply>;
  feedConsumers(args?: Fields, opts?: CallOptions): Promise<Reply & { head: number; consumers: { consumer: string; acked: number; lag: number }[] }>;
  feedForget(args: { consumer: string }, opts?: CallOptions): Promise<Reply>;
  cluster(args?: Fields, opts?: CallOptions): Promise<Reply & { role: string; primary?: string }>;
  metrics(args?: Fields, opts?: CallOptions): Promise<Reply & { text: string }>;
  backup(args: { path: string }, opts?: CallOptions): Promise<Reply>;
  clusterChange(args: { change: 'add' | 'remove' | 'promote'; node: string }, opts?: CallOptions): Promise<Reply>;
  /** a feed consumer: an async iterator of entries, each with ack() */
  feed(opts: FeedOptions): Feed;
  /** closes every connection */
  close(): Promise<void>;
}

/** Makes a client and opens its first connection (hello with the token). */
export declare function connect(opts?: ConnectOptions): Promise<Client>;
