// Scenarios RocketMQ 5's official Node.js client (rocketmq-client-nodejs)
// runs against Samsa's gRPC proxy. Run by compat_test.go:
//
//   node scenarios.js ENDPOINTS SCENARIO RUN_ID
//
// Each scenario prints one line "RESULT {json}" and exits 0 when it
// passed, or prints "FAIL reason" and exits 1. Topics (one a scenario,
// made by the Go test) are "<scenario>-<RUN_ID>" except where noted.
'use strict';

const { Producer, SimpleConsumer, PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

const [ endpoints, scenario, runId ] = process.argv.slice(2);
const silent = { info() {}, warn() {}, error() {}, debug() {}, trace() {} };
const logger = process.env.SAMSA_TEST_LOG ? console : silent;

function fail(reason) {
  console.log('FAIL ' + reason);
  process.exit(1);
}

function ok(result) {
  console.log('RESULT ' + JSON.stringify(result));
  process.exit(0);
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

// receiveUntil receives (and acks unless noAck) until pred(all) or the
// deadline.
async function receiveUntil(consumer, pred, { deadlineMs = 60000, invisibleMs = 30000, noAck = false } = {}) {
  const all = [];
  const end = Date.now() + deadlineMs;
  while (!pred(all)) {
    if (Date.now() > end) return all;
    const msgs = await consumer.receive(16, invisibleMs);
    for (const m of msgs) {
      all.push(m);
      if (!noAck) await consumer.ack(m);
    }
  }
  return all;
}

function simpleConsumer(group, topic, awaitDuration = 5000) {
  return new SimpleConsumer({
    endpoints, namespace: '', consumerGroup: group, logger,
    subscriptions: new Map().set(topic, '*'), awaitDuration,
  });
}

const scenarios = {
  // produce + SimpleConsumer receive/ack
  async basic() {
    const topic = `basic-${runId}`;
    const producer = new Producer({ endpoints, namespace: '', topics: [ topic ], logger });
    await producer.startup();
    const sent = [];
    for (let i = 0; i < 10; i++) {
      const r = await producer.send({ topic, tag: 'TagA', keys: [ `key-${i}` ], body: Buffer.from(`hello ${i}`),
        properties: new Map().set('n', String(i)) });
      sent.push(r.messageId);
    }
    const consumer = simpleConsumer(`g-basic-${runId}`, topic);
    await consumer.startup();
    const got = await receiveUntil(consumer, all => all.length >= 10);
    // Everything acknowledged: nothing more comes.
    const more = await receiveUntil(consumer, all => all.length >= 1, { deadlineMs: 2000 });
    await consumer.shutdown();
    await producer.shutdown();
    if (got.length !== 10 || more.length !== 0) fail(`received ${got.length} of 10, then ${more.length} more`);
    for (const m of got) {
      const i = Number(m.properties.get('n'));
      if (m.body.toString() !== `hello ${i}` || m.tag !== 'TagA' || !m.keys.includes(`key-${i}`)) {
        fail(`message ${m.messageId}: body ${m.body}, tag ${m.tag}, keys ${m.keys}`);
      }
      if (!sent.includes(m.messageId)) fail(`message id ${m.messageId} was not sent`);
    }
    ok({ sent: sent.length, received: got.length });
  },

  // FIFO message groups: each group's messages arrive in send order.
  async fifo() {
    const topic = `fifo-${runId}`;
    const producer = new Producer({ endpoints, namespace: '', topics: [ topic ], logger });
    await producer.startup();
    const groups = [ 'alpha', 'beta', 'gamma' ];
    const per = 8;
    for (let i = 0; i < per; i++) {
      for (const g of groups) {
        await producer.send({ topic, messageGroup: g, body: Buffer.from(`${g}:${i}`) });
      }
    }
    const consumer = simpleConsumer(`g-fifo-${runId}`, topic);
    await consumer.startup();
    const got = await receiveUntil(consumer, all => all.length >= per * groups.length);
    await consumer.shutdown();
    await producer.shutdown();
    const next = {};
    for (const m of got) {
      const [ g, i ] = m.body.toString().split(':');
      if (m.messageGroup !== g) fail(`message group ${m.messageGroup}, body ${m.body}`);
      if (Number(i) !== (next[g] || 0)) fail(`group ${g}: got ${i}, want ${next[g] || 0}`);
      next[g] = Number(i) + 1;
    }
    if (got.length !== per * groups.length) fail(`received ${got.length}`);
    ok({ received: got.length, groups: next });
  },

  // delay (relative) and timed (absolute) messages: none before its time
  async delay() {
    const topic = `delay-${runId}`;
    const producer = new Producer({ endpoints, namespace: '', topics: [ topic ], logger });
    await producer.startup();
    const sentAt = Date.now();
    await producer.send({ topic, delay: 3000, body: Buffer.from('delayed') });
    const at = new Date(Date.now() + 4000);
    await producer.send({ topic, deliveryTimestamp: at, body: Buffer.from('timed') });
    const consumer = simpleConsumer(`g-delay-${runId}`, topic);
    await consumer.startup();
    const got = [];
    const end = Date.now() + 60000;
    while (got.length < 2 && Date.now() < end) {
      const msgs = await consumer.receive(16, 30000);
      for (const m of msgs) {
        got.push({ body: m.body.toString(), at: Date.now(), due: m.deliveryTimestamp && m.deliveryTimestamp.getTime() });
        await consumer.ack(m);
      }
    }
    await consumer.shutdown();
    await producer.shutdown();
    if (got.length !== 2) fail(`received ${got.length} of 2`);
    for (const g of got) {
      const due = g.body === 'delayed' ? sentAt + 3000 : at.getTime();
      if (g.at < due) fail(`${g.body} delivered ${due - g.at} ms early`);
      if (!g.due) fail(`${g.body} without its delivery timestamp`);
    }
    ok({ received: got.map(g => g.body) });
  },

  // a transaction committed, one rolled back, one left open and checked back
  async transaction() {
    const topic = `txn-${runId}`;
    let checked = 0;
    const producer = new Producer({
      endpoints, namespace: '', topics: [ topic ], logger,
      checker: {
        async check(view) {
          checked++;
          return view.body.toString() === 'open' ? TransactionResolution.COMMIT : TransactionResolution.ROLLBACK;
        },
      },
    });
    await producer.startup();
    const send = async (body, end) => {
      const tx = producer.beginTransaction();
      await producer.send({ topic, body: Buffer.from(body) }, tx);
      if (end === 'commit') await tx.commit();
      if (end === 'rollback') await tx.rollback();
    };
    await send('committed', 'commit');
    await send('rolledback', 'rollback');
    await send('open', 'none');
    const consumer = simpleConsumer(`g-txn-${runId}`, topic);
    await consumer.startup();
    const got = await receiveUntil(consumer, all => all.length >= 2);
    // The rolled-back one must not follow.
    const more = await receiveUntil(consumer, all => all.length >= 1, { deadlineMs: 3000 });
    await consumer.shutdown();
    await producer.shutdown();
    const bodies = got.concat(more).map(m => m.body.toString()).sort();
    if (JSON.stringify(bodies) !== JSON.stringify([ 'committed', 'open' ])) fail(`received ${bodies}`);
    if (checked < 1) fail('the open transaction was not checked back');
    ok({ received: bodies, checked });
  },

  // not acknowledged: redelivered once the invisible duration passed
  async invisible() {
    const topic = `invisible-${runId}`;
    const producer = new Producer({ endpoints, namespace: '', topics: [ topic ], logger });
    await producer.startup();
    await producer.send({ topic, body: Buffer.from('again') });
    const consumer = simpleConsumer(`g-invisible-${runId}`, topic);
    await consumer.startup();
    const first = await receiveUntil(consumer, all => all.length >= 1, { invisibleMs: 2000, noAck: true });
    if (first.length !== 1) fail('first delivery missing');
    const second = await receiveUntil(consumer, all => all.length >= 1, { invisibleMs: 30000 });
    await consumer.shutdown();
    await producer.shutdown();
    if (second.length !== 1 || second[0].body.toString() !== 'again') fail('not redelivered');
    if (!(second[0].deliveryAttempt >= 2)) fail(`redelivered with attempt ${second[0].deliveryAttempt}`);
    ok({ attempts: [ first[0].deliveryAttempt, second[0].deliveryAttempt ] });
  },

  // a push consumer that always fails: the message goes to the DLQ after
  // the proxy's max delivery attempts
  async dlq() {
    const topic = `dlq-${runId}`;
    const group = `g-dlq-${runId}`;
    const producer = new Producer({ endpoints, namespace: '', topics: [ topic ], logger });
    await producer.startup();
    const r = await producer.send({ topic, body: Buffer.from('poison') });
    let attempts = 0;
    const push = new PushConsumer({
      endpoints, namespace: '', consumerGroup: group, logger, longPollingTimeout: 5000,
      subscriptions: new Map().set(topic, '*'),
      messageListener: { async consume() { attempts++; return ConsumeResult.FAILURE; } },
    });
    await push.startup();
    const reader = simpleConsumer(`g-dlq-reader-${runId}`, `%DLQ%${group}`);
    await reader.startup();
    const dead = await receiveUntil(reader, all => all.length >= 1, { deadlineMs: 120000 });
    await push.shutdown();
    await reader.shutdown();
    await producer.shutdown();
    if (dead.length !== 1 || dead[0].body.toString() !== 'poison') fail(`DLQ holds ${dead.length} messages`);
    ok({ attempts, messageId: r.messageId, dlqMessageId: dead[0].messageId });
  },
};

// ACL: ENDPOINTS is a proxy with an accounts file holding nodeAK0001 /
// nodeSK0001. A producer without credentials cannot start (its route
// query is refused); a producer and consumer signing as the account send
// and receive.
scenarios.acl = async function acl() {
  const topic = `acl-${runId}`;
  const unsigned = new Producer({ endpoints, namespace: '', topics: [ topic ], logger });
  let refused = false;
  try {
    await unsigned.startup();
  } catch (err) {
    refused = true;
  }
  if (!refused) fail('an unsigned producer started against an ACL proxy');
  const sessionCredentials = { accessKey: 'nodeAK0001', accessSecret: 'nodeSK0001' };
  const producer = new Producer({ endpoints, namespace: '', topics: [ topic ], logger, sessionCredentials });
  await producer.startup();
  await producer.send({ topic, body: Buffer.from('signed') });
  const consumer = new SimpleConsumer({
    endpoints, namespace: '', consumerGroup: `g-acl-${runId}`, logger, sessionCredentials,
    subscriptions: new Map().set(topic, '*'), awaitDuration: 5000,
  });
  await consumer.startup();
  const got = await receiveUntil(consumer, all => all.length >= 1);
  await consumer.shutdown();
  await producer.shutdown();
  if (got.length !== 1 || got[0].body.toString() !== 'signed') fail(`received ${got.length}`);
  ok({ unsignedRefused: refused, received: got[0].body.toString() });
};

const run = scenarios[scenario];
if (!run) fail(`no scenario ${scenario}`);
run().catch(err => fail(err && err.stack || String(err)));
