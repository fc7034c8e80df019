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
