"""`graphs.prebuilt`: the tool node and the ReAct agent (LangGraph's `langgraph.prebuilt`).

Importing it loads langchain_core (tools and messages); `import graphs` does not.
"""

from .chat_agent_executor import AgentState, AgentStateWithStructuredResponse, create_react_agent
from .tool_node import (
    INVALID_TOOL_NAME_ERROR_TEMPLATE,
    TOOL_CALL_ERROR_TEMPLATE,
    AsyncToolCallWrapper,
    BeforeCall,
    Edited,
    InjectedState,
    InjectedStore,
    Rejected,
    RunsAfter,
    ToolCallRequest,
    ToolCallWrapper,
    ToolInvocationError,
    ToolNode,
    ToolRuntime,
    tools_condition,
)

__all__ = [
    "INVALID_TOOL_NAME_ERROR_TEMPLATE",
    "TOOL_CALL_ERROR_TEMPLATE",
    "AgentState",
    "AgentStateWithStructuredResponse",
    "AsyncToolCallWrapper",
    "BeforeCall",
    "Edited",
    "InjectedState",
    "InjectedStore",
    "Rejected",
    "RunsAfter",
    "ToolCallRequest",
    "ToolCallWrapper",
    "ToolInvocationError",
    "ToolNode",
    "ToolRuntime",
    "create_react_agent",
    "tools_condition",
]
