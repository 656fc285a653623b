// An agent session streaming its transcript: a model provider and an
// agent, a workspace, a session on it, and the run's transcript printed
// entry by entry as the agent works (a dropped stream resumes by itself).
//
//   MODEL_URL=https://api.openai.com/v1 MODEL_API_KEY=sk-... MODEL=gpt-4o-mini node dist/agent_session.js

import { Primer } from "@primer/sdk";

const primer = await Primer.connect();
const suffix = Date.now().toString(36);
const llm = await primer.llmProviders.create({ id: `model-${suffix}`, kind: "openai", base_url: process.env.MODEL_URL ?? "", api_key: process.env.MODEL_API_KEY ?? "" });
const agent = await primer.agents.create({
  id: `code-runner-${suffix}`,
  model: { provider_id: llm.id, model_name: process.env.MODEL ?? "gpt-4o-mini", max_tokens: 1024 },
  system_prompt: ["You run code in the workspace with the workspace tools.", "Report what it printed."],
  max_turns: 10,
  timeout: "5m",
});
try {
  await using ws = await primer.workspaces.create(process.env.PRIMER_TEMPLATE ?? "default");
  await using session = await primer.sessions.create({ workspace_id: ws.id, agent: agent.id });
  await session.run(agent.id, "Write snippet.py printing 6 * 7, run it into out.txt, and tell me what it printed.");

  const transcript = session.followTranscript();
  for (;;) {
    const next = await transcript.next();
    if (next.done) {
      console.log(`run ${next.value.end_reason} after ${next.value.turns} turns`);
      break;
    }
    const e = next.value;
    if (e.role === "tool") console.log(`  tool ${e.tool_name}(${JSON.stringify(e.tool_args)}) -> ${JSON.stringify(e.tool_result).slice(0, 120)}`);
    else console.log(`${e.role}: ${e.content ?? ""}`);
  }
  console.log(`out.txt: ${(await ws.files.readText("out.txt")).trim()}`);
} finally {
  await primer.agents.delete(agent.id);
  await primer.llmProviders.delete(llm.id);
}
