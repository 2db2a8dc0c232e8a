"""An OpenHands SDK agent as its docs start one, run by the SDK's own virtualenv (not the
hub's) for tests/endpoint/test_openhands_sdk.py: its terminal and file editor tools in
the working folder, its LLM pointed at the gateway with the room's key, one task."""

import os
import sys

from openhands.sdk import LLM, Agent, Conversation, Tool
from openhands.tools.file_editor import FileEditorTool
from openhands.tools.terminal import TerminalTool

llm = LLM(model="openai/atrium", base_url=os.environ["ATRIUM_GATEWAY_URL"], api_key=os.environ["ATRIUM_GATEWAY_KEY"],
          usage_id="agent", num_retries=0)
agent = Agent(llm=llm, tools=[Tool(name=TerminalTool.name), Tool(name=FileEditorTool.name)])
conversation = Conversation(agent=agent, workspace=os.getcwd())
conversation.send_message(sys.argv[1])
conversation.run()
print("FINISHED:", conversation.state.execution_status)
