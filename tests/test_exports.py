"""The public surface of `graphs`: pinned, complete, and light to import."""

import enum
import subprocess
import sys
import types

import graphs
import graphs.checkpoint
import graphs.errors

GRAPHS_API = [
    "END",
    "START",
    "BaseCheckpointSaver",
    "CheckpointConflictError",
    "CheckpointFormatError",
    "CheckpointTuple",
    "CheckpointerRequiredError",
    "Command",
    "CompiledGraph",
    "EmptyChannelError",
    "EmptyInputError",
    "GraphError",
    "GraphInterrupt",
    "GraphRecursionError",
    "GraphSetupError",
    "InMemorySaver",
    "Interrupt",
    "InvalidCheckpointerError",
    "InvalidUpdateError",
    "MemorySaver",
    "MultipleSubgraphsError",
    "NodeInterrupt",
    "NodeTimeoutError",
    "ParentCommand",
    "RecordedNodeError",
    "AmbiguousResumeError",
    "ResumeError",
    "RetryPolicy",
    "RunConfig",
    "SQLSaver",
    "SchemaVersionError",
    "Send",
    "SerializationError",
    "SideEffectUnknownError",
    "SideEffectUnrecordedError",
    "StateGraph",
    "StateSnapshot",
    "StateTask",
    "ThreadBusyError",
    "ThreadLockLostError",
    "aonce",
    "interrupt",
    "once",
]

LAZY = {"SQLSaver"}  # imported on first use, so that `import graphs` needs no SQLAlchemy


def public_names(module: types.ModuleType) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name not in ("TYPE_CHECKING", "Any")
    }


def test_graphs_all_is_pinned() -> None:
    assert sorted(graphs.__all__) == sorted(GRAPHS_API)
    assert len(set(graphs.__all__)) == len(graphs.__all__)


def test_the_issue_s_api_is_there() -> None:
    required = {
        "StateGraph", "START", "END", "interrupt", "Command", "Interrupt", "StateSnapshot",
        "InMemorySaver", "MemorySaver", "BaseCheckpointSaver", "CheckpointTuple",
        "GraphInterrupt", "NodeInterrupt", "GraphRecursionError",
    }  # fmt: skip
    assert required <= set(graphs.__all__)
    assert graphs.MemorySaver is graphs.InMemorySaver


def test_every_exported_name_resolves_and_nothing_public_is_left_out() -> None:
    for name in graphs.__all__:
        assert getattr(graphs, name) is not None
    assert public_names(graphs) == set(graphs.__all__) - LAZY


def test_every_error_is_exported_and_under_the_root() -> None:
    for name in graphs.errors.__all__:
        error = getattr(graphs.errors, name)
        if name == "ErrorCode":  # LangGraph's codes for its error pages, not an error
            assert issubclass(error, enum.Enum)
            continue
        assert getattr(graphs, name) is error
        assert issubclass(error, graphs.GraphError)


def test_checkpoint_package_exports() -> None:
    assert sorted(graphs.checkpoint.__all__) == [
        "BaseCheckpointSaver",
        "Checkpoint",
        "CheckpointMetadata",
        "CheckpointTuple",
        "InMemorySaver",
        "MemorySaver",
        "PendingWrite",
        "SQLSaver",
    ]
    assert public_names(graphs.checkpoint) == set(graphs.checkpoint.__all__) - LAZY
    assert graphs.checkpoint.SQLSaver is graphs.SQLSaver


def test_the_error_tree() -> None:
    assert issubclass(graphs.NodeInterrupt, graphs.GraphInterrupt)
    assert issubclass(graphs.GraphRecursionError, RecursionError)
    assert issubclass(graphs.GraphSetupError, ValueError)
    assert issubclass(graphs.InvalidCheckpointerError, graphs.GraphSetupError)
    assert issubclass(graphs.InvalidCheckpointerError, TypeError)  # LangGraph's type for it
    assert issubclass(graphs.CheckpointConflictError, graphs.ThreadBusyError)
    assert issubclass(graphs.SchemaVersionError, graphs.CheckpointFormatError)


def test_importing_graphs_pulls_in_neither_sqlalchemy_nor_slack() -> None:
    code = (
        "import sys, graphs\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('sqlalchemy', 'alembic', 'slack_sdk', 'slack_bolt', 'aiohttp', 'psycopg', 'bot'))\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_missing_name_is_an_attribute_error() -> None:
    try:
        graphs.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as e:
        assert str(e) == "module 'graphs' has no attribute 'NoSuchThing'"
    else:
        raise AssertionError("graphs.NoSuchThing resolved")


# LangGraph's module paths: porting an application is an import change (langgraph -> graphs).
LANGGRAPH_PATHS = {
    "graphs.graph": ["StateGraph", "START", "END", "MessagesState", "add_messages"],
    "graphs.graph.state": ["StateGraph", "CompiledStateGraph"],
    "graphs.constants": ["START", "END", "TAG_NOSTREAM", "TAG_HIDDEN"],
    "graphs.graph.message": [
        "add_messages", "MessagesState", "REMOVE_ALL_MESSAGES", "Messages", "AnyMessage",
    ],
    "graphs.types": [
        "Command", "interrupt", "Send", "Interrupt", "StateSnapshot", "StreamMode",
        "RetryPolicy", "StreamWriter",
    ],
    "graphs.runtime": ["Runtime", "get_runtime"],
    "graphs.prebuilt": ["ToolNode", "tools_condition", "create_react_agent"],
    "graphs.config": ["get_config", "get_stream_writer"],
    "graphs.errors": [
        "GraphRecursionError", "InvalidUpdateError", "GraphInterrupt", "NodeInterrupt",
        "ParentCommand", "MultipleSubgraphsError",
    ],
    "graphs.checkpoint.memory": ["InMemorySaver", "MemorySaver"],
    "graphs.func": ["entrypoint", "task"],
    "graphs.store.memory": ["InMemoryStore"],
    "graphs.store.base": [
        "BaseStore", "Item", "SearchItem", "IndexConfig", "TTLConfig", "ensure_embeddings",
        "get_text_at_path", "tokenize_path", "EmbeddingsFunc", "AEmbeddingsFunc",
    ],
    "graphs.cache.memory": ["InMemoryCache"],
    "graphs.cache.base": ["BaseCache"],
    "graphs.cache.sqlite": ["SqliteCache"],
    "graphs.cache.sql": ["SQLCache"],
    "graphs.channels": [
        "LastValue", "BinaryOperatorAggregate", "DeltaChannel", "UntrackedValue",
        "EphemeralValue", "Topic",
    ],
    "graphs.channels.untracked_value": ["UntrackedValue"],
    "graphs.channels.ephemeral_value": ["EphemeralValue"],
    "graphs.channels.topic": ["Topic"],
    "graphs.channels.last_value": ["LastValue"],
    "graphs.channels.binop": ["BinaryOperatorAggregate"],
    "graphs.channels.delta": ["DeltaChannel"],
    # what PregelTask.path starts with; the node-finished hook LangGraph's tests set
    "graphs._internal._constants": ["PULL", "PUSH", "CONFIG_KEY_NODE_FINISHED"],
}  # fmt: skip


def test_langgraph_s_module_paths_have_their_names() -> None:
    import importlib

    for path, names in LANGGRAPH_PATHS.items():
        module = importlib.import_module(path)
        for name in names:
            assert getattr(module, name) is not None, f"{path}.{name}"
        assert set(names) <= set(module.__all__), path
    import graphs.graph
    import graphs.graph.message
    import graphs.types

    # The same builder in LangGraph's dialect (`graphs.types.Dialect`): where the graph comes
    # from chooses its semantics.
    assert issubclass(graphs.graph.StateGraph, graphs.StateGraph)
    assert (graphs.graph.StateGraph.dialect, graphs.StateGraph.dialect) == ("langgraph", "graphs")
    assert graphs.graph.add_messages is graphs.graph.message.add_messages
    assert graphs.types.interrupt is graphs.interrupt
    assert graphs.Send is graphs.types.Send


def test_importing_graphs_or_graphs_graph_pulls_in_no_langchain_core() -> None:
    code = (
        "import sys, graphs, graphs.graph, graphs.types, graphs.config, graphs.runtime, graphs.func\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('langchain_core', 'pydantic')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
