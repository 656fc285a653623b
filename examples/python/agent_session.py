"""An agent works in a sandbox; its transcript streams as it goes.

    PRIMER_URL=... PRIMER_TOKEN=... MODEL_BASE_URL=https://api.openai.com/v1 \\
    MODEL_API_KEY=sk-... MODEL_NAME=gpt-4o-mini python3 agent_session.py

MODEL_KIND is openai (default) or anthropic. The model key is stored by
Primer and never enters the sandbox.
"""

import os
import uuid

import primer

suffix = uuid.uuid4().hex[:6]
with primer.Client() as client:
    provider = client.llm_providers.create(
        f"model-{suffix}", os.environ.get("MODEL_KIND", "openai"), os.environ["MODEL_BASE_URL"],
        api_key=os.environ["MODEL_API_KEY"],
    )
    agent = client.agents.create(
        f"code-runner-{suffix}",
        primer.AgentModel(provider_id=provider.id, model_name=os.environ.get("MODEL_NAME", "gpt-4o-mini"), max_tokens=1024),
        system_prompt=["You run code in the workspace with the workspace tools.", "Report what it printed."],
        max_turns=10,
        timeout="5m",
    )
    try:
        with client.workspaces.create(os.environ.get("TEMPLATE", "default")) as ws, ws.session() as session:
            stream = session.run(agent.id, "Write snippet.py that prints 6 * 7, run it into out.txt, and tell me the result.")
            for entry in stream:
                if entry.role == "tool":
                    print(f"tool   {entry.tool_name} {entry.tool_args} -> commit {entry.commit[:8]}")
                elif entry.content:
                    print(f"{entry.role:6} {entry.content}")
            print(f"run ended: {stream.run.end_reason} after {stream.run.turns} turns")
            print("out.txt:", ws.files.read_text("out.txt"), end="")
            for commit in session.history().items:
                print(f"history {commit.commit[:8]} {commit.summary}")
    finally:
        client.agents.delete(agent.id)
        client.llm_providers.delete(provider.id)
