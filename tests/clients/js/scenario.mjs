// The JavaScript SDK (@aws-sdk/client-sqs, from npm, locked in package-lock.json) doing the shared
// client work against the SQS endpoint: the same steps and facts as tests/sqs_client_scenario.py,
// compared with its EXPECTED by tests/test_server_clients_js.py.
//
//     node tests/clients/js/scenario.mjs http://127.0.0.1:PORT
//
// prints one JSON line of facts. The SDK validates MD5OfMessageBody on every send, batch send and
// receive (its md5 middleware, on by default: a wrong digest throws); this script also recomputes
// MD5OfMessageAttributes by SQS's documented encoding, so the attribute digest is checked by a
// second implementation, not only by the endpoint's own. The clock moves through the control
// API (POST /_control/clock/advance).
import { createHash } from "node:crypto";
import {
  SQSClient,
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ListDeadLetterSourceQueuesCommand,
  QueueDoesNotExist,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";

const base = process.argv[2];
const sqs = new SQSClient({
  region: "us-east-1",
  endpoint: base,
  credentials: { accessKeyId: "testing", secretAccessKey: "testing" },
});

async function advance(seconds) {
  const answer = await fetch(`${base}/_control/clock/advance`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ seconds }),
  });
  if (answer.status !== 200) throw new Error(`advance: HTTP ${answer.status}`);
}

async function receive(url, n = 1, extra = {}) {
  const answer = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: url,
      MaxNumberOfMessages: n,
      MessageSystemAttributeNames: ["All"],
      ...extra,
    }),
  );
  return answer.Messages ?? [];
}

// MD5OfMessageAttributes as SQS documents it: the attributes sorted by name, each as its name,
// its data type (4-byte big-endian lengths before each), a transport byte (1 string, 2 binary)
// and its value (length first too).
function md5OfAttributes(attributes) {
  const parts = [];
  const field = (bytes) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    parts.push(length, bytes);
  };
  for (const name of Object.keys(attributes).sort()) {
    const { DataType, StringValue, BinaryValue } = attributes[name];
    field(Buffer.from(name, "utf8"));
    field(Buffer.from(DataType, "utf8"));
    if (BinaryValue !== undefined) {
      parts.push(Buffer.from([2]));
      field(Buffer.from(BinaryValue));
    } else {
      parts.push(Buffer.from([1]));
      field(Buffer.from(StringValue, "utf8"));
    }
  }
  return createHash("md5").update(Buffer.concat(parts)).digest("hex");
}

const path = (url) => new URL(url).pathname;
const facts = {};

// Create, send with message attributes, receive, and let the visibility timeout pass.
const url = (
  await sqs.send(new CreateQueueCommand({ QueueName: "work", Attributes: { VisibilityTimeout: "30" } }))
).QueueUrl;
facts.queue_path = path(url);
const attributes = {
  color: { DataType: "String", StringValue: "red" },
  n: { DataType: "Number", StringValue: "7" },
  blob: { DataType: "Binary", BinaryValue: Uint8Array.from([0, 1, 255]) },
};
const sent = await sqs.send(
  new SendMessageCommand({ QueueUrl: url, MessageBody: "hello", MessageAttributes: attributes }),
);
facts.sent_md5_of_body = sent.MD5OfMessageBody;
const [first] = await receive(url, 1, { MessageAttributeNames: ["All"] });
facts.first = {
  body: first.Body,
  receive_count: first.Attributes.ApproximateReceiveCount,
  attributes: {
    color: first.MessageAttributes.color.StringValue,
    n: first.MessageAttributes.n.StringValue,
    blob: Buffer.from(first.MessageAttributes.blob.BinaryValue).toString("base64"),
  },
};
facts.attribute_digests = {
  sent: sent.MD5OfMessageAttributes === md5OfAttributes(attributes),
  received: first.MD5OfMessageAttributes === md5OfAttributes(first.MessageAttributes),
};
facts.received_while_in_flight = (await receive(url)).length;
await advance(30);
const [second] = await receive(url);
facts.redelivered = {
  same_message: second.MessageId === first.MessageId,
  receive_count: second.Attributes.ApproximateReceiveCount,
};
await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: second.ReceiptHandle }));
await advance(30);
facts.received_after_delete = (await receive(url)).length;

// Batches: per-entry results by Id.
const batch = await sqs.send(
  new SendMessageBatchCommand({
    QueueUrl: url,
    Entries: [0, 1, 2].map((i) => ({ Id: `b${i}`, MessageBody: `m${i}` })),
  }),
);
const got = await receive(url, 10);
const deleted = await sqs.send(
  new DeleteMessageBatchCommand({
    QueueUrl: url,
    Entries: got.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
  }),
);
facts.batch = {
  sent: (batch.Successful ?? []).map((e) => e.Id).sort(),
  received: got.map((m) => m.Body).sort(),
  deleted: (deleted.Successful ?? []).length,
};

// ChangeMessageVisibility: a consumer that needs longer asks for it.
await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: "slow" }));
const [slow] = await receive(url);
await sqs.send(
  new ChangeMessageVisibilityCommand({
    QueueUrl: url,
    ReceiptHandle: slow.ReceiptHandle,
    VisibilityTimeout: 120,
  }),
);
await advance(60);
const hidden = (await receive(url)).length;
await advance(60);
const back = await receive(url);
facts.visibility = {
  hidden_after_change: hidden,
  back_after_change: JSON.stringify(back.map((m) => m.Body)) === JSON.stringify(["slow"]),
};

// Dead letters: one receive allowed, then the message belongs to the dead-letter queue.
const dead = (await sqs.send(new CreateQueueCommand({ QueueName: "work-dead" }))).QueueUrl;
const deadArn = (
  await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dead, AttributeNames: ["QueueArn"] }))
).Attributes.QueueArn;
const policy = JSON.stringify({ deadLetterTargetArn: deadArn, maxReceiveCount: "1" });
const source = (
  await sqs.send(
    new CreateQueueCommand({
      QueueName: "work-src",
      Attributes: { VisibilityTimeout: "10", RedrivePolicy: policy },
    }),
  )
).QueueUrl;
await sqs.send(new SendMessageCommand({ QueueUrl: source, MessageBody: "doomed" }));
const [doomed] = await receive(source);
facts.dead_letters_first_receive = doomed.Body;
await advance(10);
const after = await receive(source);
const sources = (await sqs.send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: dead }))).queueUrls ?? [];
facts.dead_letters = {
  source_after_timeout: after.length,
  dead_letter_queue: (await receive(dead, 10)).map((m) => m.Body),
  sources: sources.map(path),
};

// An error the client's code handles by its name.
try {
  await sqs.send(new GetQueueUrlCommand({ QueueName: "no-such-queue" }));
  facts.missing_queue_error = null;
} catch (error) {
  facts.missing_queue_error = error instanceof QueueDoesNotExist ? error.name : `other: ${error.name}`;
}

// FIFO: order within a group, one group's messages in flight at a time, deduplication.
const fifo = (
  await sqs.send(
    new CreateQueueCommand({
      QueueName: "work.fifo",
      Attributes: { FifoQueue: "true", ContentBasedDeduplication: "true" },
    }),
  )
).QueueUrl;
const sends = [];
for (const [body, group] of [["a1", "a"], ["a2", "a"], ["b1", "b"], ["a1", "a"]]) {
  sends.push(await sqs.send(new SendMessageCommand({ QueueUrl: fifo, MessageBody: body, MessageGroupId: group })));
}
const [m1] = await receive(fifo);
const [m2] = await receive(fifo);
const bothInFlight = (await receive(fifo, 10)).length;
await sqs.send(new DeleteMessageCommand({ QueueUrl: fifo, ReceiptHandle: m1.ReceiptHandle }));
const [m3] = await receive(fifo);
await sqs.send(new DeleteMessageCommand({ QueueUrl: fifo, ReceiptHandle: m2.ReceiptHandle }));
await sqs.send(new DeleteMessageCommand({ QueueUrl: fifo, ReceiptHandle: m3.ReceiptHandle }));
facts.fifo = {
  order: [m1, m2, m3].map((m) => m.Body),
  while_both_groups_in_flight: bothInFlight,
  duplicate_delivered: (await receive(fifo, 10)).length > 0,
  sequence_numbers: sends.every((s) => Boolean(s.SequenceNumber)),
};

facts.client = { md5_validation: sqs.config.md5 !== false };
sqs.destroy();
console.log(JSON.stringify(facts));
