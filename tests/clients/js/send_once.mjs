// Send one message with the JavaScript SDK and say whether the SDK accepted the answer:
//
//     node tests/clients/js/send_once.mjs ENDPOINT QUEUE_URL
//
// prints {"ok": true, "md5": ...} or {"ok": false, "error": "..."}. tests/test_server_clients_js.py
// runs it against a stub whose answer carries a wrong MD5OfMessageBody, to show that the SDK's
// digest check is on (so the scenario passing against the endpoint means its digests are right).
import { SQSClient, SendMessageCommand } from "@aws-sdk/client-sqs";

const [endpoint, queueUrl] = process.argv.slice(2);
const sqs = new SQSClient({
  region: "us-east-1",
  endpoint,
  credentials: { accessKeyId: "testing", secretAccessKey: "testing" },
  maxAttempts: 1,
});
try {
  const sent = await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "hello" }));
  console.log(JSON.stringify({ ok: true, md5: sent.MD5OfMessageBody }));
} catch (error) {
  console.log(JSON.stringify({ ok: false, error: String(error.message ?? error) }));
}
sqs.destroy();
