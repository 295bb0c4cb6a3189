// Drives strata serve with the official `openai` npm client: completions, chat completions and
// streaming. Usage: node client.mjs PORT EXPECTED_GREEDY_TEXT
import OpenAI from "openai";

const [port, expected] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: "test-key" });
const fail = (msg) => {
  console.error(`FAIL: ${msg}`);
  process.exit(1);
};

const models = await client.models.list();
if (models.data.length !== 1) fail(`models: ${JSON.stringify(models.data)}`);

const c = await client.completions.create({
  model: models.data[0].id, prompt: "Once upon a time", max_tokens: 24, temperature: 0,
});
if (c.choices[0].text !== expected) fail(`completion text ${JSON.stringify(c.choices[0].text)}`);
if (c.usage.completion_tokens !== 24) fail(`usage ${JSON.stringify(c.usage)}`);

const chat = await client.chat.completions.create({
  model: models.data[0].id,
  messages: [{ role: "system", content: "You tell stories." }, { role: "user", content: "Hi" }],
  max_tokens: 12, temperature: 0,
});
const whole = chat.choices[0].message.content;
if (typeof whole !== "string" || chat.choices[0].message.role !== "assistant") {
  fail(`chat ${JSON.stringify(chat.choices[0])}`);
}

const stream = await client.chat.completions.create({
  model: models.data[0].id,
  messages: [{ role: "system", content: "You tell stories." }, { role: "user", content: "Hi" }],
  max_tokens: 12, temperature: 0, stream: true,
});
let text = "";
let finish = null;
for await (const chunk of stream) {
  text += chunk.choices[0]?.delta?.content ?? "";
  finish = chunk.choices[0]?.finish_reason ?? finish;
}
if (text !== whole) fail(`streamed ${JSON.stringify(text)} vs ${JSON.stringify(whole)}`);
if (finish !== "length") fail(`finish_reason ${finish}`);

try {
  await client.completions.create({ model: "x", prompt: 5 });
  fail("a numeric prompt was accepted");
} catch (e) {
  if (!(e instanceof OpenAI.BadRequestError)) fail(`expected a 400, got ${e}`);
}
console.log("openai client: completions, chat, streaming and errors OK");
