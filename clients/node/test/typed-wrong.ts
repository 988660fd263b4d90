// Wrong uses of slotd-client that `tsc --noEmit` must refuse (test/types.test.js checks that
// every error is in this file, and none in typed-example.ts). Never run.
import { connect } from 'slotd-client';

export async function wrong(): Promise<void> {
  const c = await connect({ hosts: ['127.0.0.1:7420'] });
  await c.hold({ event: 'gig', user: 'ann' }); // no qty
  await c.confirm({ event: 'gig', user: 'ann' }); // no hold
  await connect({ hosts: ['h:1'], timeoutMs: '5s' }); // timeoutMs is a number
}
