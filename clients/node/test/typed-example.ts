// A typed use of slotd-client, checked by `tsc --noEmit` (test/types.test.js); never run.
import { connect, SlotError, type HoldReply, type FeedEntry } from 'slotd-client';

export async function buy(hosts: string[]): Promise<string | null> {
  const c = await connect({ hosts, token: 'f-secret', timeoutMs: 5000, retries: 8 });
  try {
    const h: HoldReply = await c.hold({ event: 'gig', user: 'ann', qty: 2, ttl_ms: 60000 });
    if (h.status === 'sold_out') return null;
    const hold: string = h.hold ?? '';
    await c.extend({ event: 'gig', hold, user: 'ann', by_ms: 30000 });
    const paid = await c.confirm({ event: 'gig', hold, user: 'ann', qty: 1 });
    const n: number = paid.qty;
    const view = await c.event({ event: 'gig' });
    const free: number = view.available + n;
    await c.release({ event: 'gig', hold, user: 'ann' });
    await c.request('get_hold', { event: 'gig', hold, user: 'ann' }, { timeoutMs: 100 });
    return `${hold}:${free}`;
  } catch (err) {
    if (err instanceof SlotError && err.code === 'unknown_hold') return null;
    throw err;
  } finally {
    await c.close();
  }
}

export async function mailer(hosts: string[]): Promise<number> {
  const c = await connect({ hosts });
  let last = 0;
  const feed = c.feed({ consumer: 'mail', from: 'acked', window: 100 });
  for await (const entry of feed) {
    const e: FeedEntry = entry;
    last = e.feed;
    await e.ack();
    if (last >= feed.head) break;
  }
  await c.close();
  return last;
}
