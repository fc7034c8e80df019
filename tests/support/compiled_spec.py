"""What the compiled-spec tests share: every task of a compiled pipeline spec, nested DAGs included."""


def spec_tasks(spec: dict) -> dict[str, dict]:
    """Every task: the root DAG's and those of the DAGs nested in it (the e-mail exit handler's body)."""
    tasks, dags = {}, [spec["root"]["dag"]]
    while dags:
        for name, task in dags.pop()["tasks"].items():
            tasks[name] = task
            nested = spec["components"][task["componentRef"]["name"]].get("dag")
            if nested:
                dags.append(nested)
    return tasks


def tasks_named(spec: dict, display_name: str) -> list[tuple[str, dict]]:
    """(task key, task) of every task, nested ones included, whose display name is `display_name`."""
    return [(name, task) for name, task in _all_tasks(spec) if task.get("taskInfo", {}).get("name") == display_name]


def _all_tasks(spec: dict):
    dags = [spec["root"]["dag"]]
    while dags:
        for name, task in dags.pop()["tasks"].items():
            yield name, task
            nested = spec["components"][task["componentRef"]["name"]].get("dag")
            if nested:
                dags.append(nested)


def training_branches(spec: dict) -> dict[str, tuple[str, dict]]:
    """The training loop's branches: target → (the `dsl.If` condition, that branch's training task). One
    target: no condition (''), the training task in the loop itself."""
    branches = {}
    for _, task in _all_tasks(spec):
        component = spec["components"][task["componentRef"]["name"]]
        inner = component.get("dag", {}).get("tasks", {})
        trains = [t for t in inner.values() if t.get("taskInfo", {}).get("name") == "train"]
        if task.get("triggerPolicy", {}).get("condition") and trains:
            (train,) = trains
            target = train["inputs"]["parameters"]["target"]["runtimeValue"]["constant"]
            branches[target] = (task["triggerPolicy"]["condition"], train)
        elif "parameterIterator" in task:
            for train in trains:
                branches[train["inputs"]["parameters"]["target"]["runtimeValue"]["constant"]] = ("", train)
    return branches
