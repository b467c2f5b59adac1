#!/usr/bin/env node
// node-redis (the `redis` package, v5) round trips against a
// Redis-compatible server. Usage: node test_noderedis.js HOST:PORT
//
// Run by clients/node_test.go against an in-process Sluice and against a
// real redis-server, so the expectations below are checked on the
// reference too. Exits 0 when every check passes; one line per check.
'use strict';
const assert = require('assert');
const { createClient } = require('redis');

const [host, port] = process.argv[2].split(':');
let failed = false;

async function check(name, fn, want) {
  let got;
  try {
    got = await Promise.race([fn(), new Promise((_, rej) => setTimeout(() => rej(new Error('timeout')), 5000))]);
  } catch (e) {
    got = 'THROW ' + e.constructor.name + ': ' + e.message;
  }
  try {
    assert.deepStrictEqual(got, want);
    console.log(`ok   ${name}`);
  } catch (e) {
    console.log(`FAIL ${name}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
    failed = true;
  }
}

const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

async function run(RESP) {
  const tag = `resp${RESP}`;
  const opts = { socket: { host, port: +port }, RESP, database: 1, name: 'nr' };
  const r = createClient(opts);
  r.on('error', () => {});
  await r.connect();
  await r.flushAll();
  await check(`${tag} set/get ttl`, async () => [await r.set('k', 'v', { expiration: { type: 'EX', value: 100 } }), await r.get('k'), await r.ttl('k')], ['OK', 'v', 100]);
  await check(`${tag} hash`, async () => { await r.hSet('h', { a: '1', b: '2' }); return { ...(await r.hGetAll('h')) }; }, { a: '1', b: '2' });
  await check(`${tag} zset scores`, async () => { await r.zAdd('z', [{ score: 1.5, value: 'a' }, { score: 2, value: 'b' }]); return [await r.zScore('z', 'a'), await r.zRangeWithScores('z', 0, -1)]; }, [1.5, [{ value: 'a', score: 1.5 }, { value: 'b', score: 2 }]]);
  await check(`${tag} multi`, () => r.multi().set('m', '1').incr('m').get('m').exec(), ['OK', 2, '2']);
  await check(`${tag} wrongtype`, async () => { try { await r.lPush('k', 'x'); return 'no error'; } catch (e) { return e.message; } }, 'WRONGTYPE Operation against a key holding the wrong kind of value');
  await check(`${tag} watch`, async () => {
    const w = r.duplicate(); w.on('error', () => {}); await w.connect();
    await w.watch('w'); await r.set('w', 'other');
    try { await w.multi().set('w', 'mine').exec(); return 'no error'; } catch (e) { return e.constructor.name; } finally { w.destroy(); }
  }, 'WatchError');
  await check(`${tag} scan`, async () => { for (let i = 0; i < 30; i++) await r.set('sc:' + i, 'x'); let n = 0; for await (const ks of r.scanIterator({ MATCH: 'sc:*', COUNT: 7 })) n += ks.length; return n; }, 30);
  await check(`${tag} eval`, () => r.eval('return {KEYS[1], redis.call("incr", KEYS[1])}', { keys: ['cnt'] }), ['cnt', 1]);
  await check(`${tag} blpop`, async () => {
    const b = r.duplicate(); b.on('error', () => {}); await b.connect();
    setTimeout(() => r.rPush('bl', 'v'), 50);
    try { return [await b.blPop('nolist', 0.1), await b.blPop('bl', 2)]; } finally { b.destroy(); }
  }, [null, { key: 'bl', element: 'v' }]);
  await check(`${tag} pubsub`, async () => {
    const sub = r.duplicate(); sub.on('error', () => {}); await sub.connect();
    const got = [];
    await sub.subscribe('ch', (m, ch) => got.push([ch, m]));
    await r.publish('ch', 'hi');
    await sleep(100);
    sub.destroy();
    return got;
  }, [['ch', 'hi']]);
  if (RESP === 3) {
    // Client side caching: CLIENT TRACKING and invalidation pushes.
    await check(`${tag} client side cache`, async () => {
      const c = createClient({ ...opts, clientSideCache: { ttl: 0, maxEntries: 0 } });
      c.on('error', () => {});
      await c.connect();
      await r.set('cached', '1');
      const v1 = await c.get('cached');
      const v2 = await c.get('cached');
      await r.set('cached', '2');
      await sleep(100);
      const v3 = await c.get('cached');
      const s = c.clientSideCache.stats();
      c.destroy();
      return [v1, v2, v3, s.hitCount, s.missCount];
    }, ['1', '1', '2', 1, 2]);
  }
  r.destroy();
}

(async () => {
  await run(2);
  await run(3);
  process.exit(failed ? 1 : 0);
})().catch((e) => { console.log('FAIL', e); process.exit(1); });
