"""Bookmarks as set identifiers: `{BM01}` (by id) and `{[title]}` (by title) stand for the
bookmark's selections in a set expression, with or without a modifier."""

from __future__ import annotations

from qixclient import QixClient

from conftest import CUSTOMERS, ORDERS, QixServer

REGION_OF = dict(zip(CUSTOMERS["Customer"], CUSTOMERS["Region"], strict=True))


def _sum(customers: set[str] | None = None, regions: set[str] | None = None) -> int:
    return sum(
        amount
        for customer, amount in zip(ORDERS["Customer"], ORDERS["Amount"], strict=True)
        if (customers is None or customer in customers)
        and (regions is None or REGION_OF.get(customer) in regions)
    )


def _value(qix: QixClient, doc: int, expression: str) -> object:
    return qix.result("EvaluateEx", [expression], doc)["qValue"]["qNumber"]


def test_a_bookmark_is_a_set_identifier_by_id_and_by_title(
    qix_server: QixServer, app_id: str
) -> None:
    with QixClient(qix_server.ws_base + "/app/engineData") as qix:
        doc = qix.open_doc(app_id)
        region = qix.handle_of("GetField", ["Region"], doc)
        qix.result("SelectValues", [[{"qText": "South"}]], region)
        qix.result(
            "CreateBookmark",
            [{"qInfo": {"qId": "BM01", "qType": "bookmark"}, "qMetaDef": {"title": "South only"}}],
            doc,
        )
        qix.result("ClearAll", [], doc)
        customer = qix.handle_of("GetField", ["Customer"], doc)
        qix.result("SelectValues", [[{"qText": "a"}]], customer)  # the current selection: a

        south = _sum(regions={"South"})
        assert _value(qix, doc, "Sum({BM01} Amount)") == south
        assert _value(qix, doc, "Sum({[South only]} Amount)") == south
        assert _value(qix, doc, "Sum(Amount)") == _sum(customers={"a"})
        # A modifier on the bookmark's selections; set operators with the current one.
        assert _value(qix, doc, "Sum({BM01<Region={North}>} Amount)") == _sum(regions={"North"})
        assert _value(qix, doc, "Sum({BM01+$} Amount)") == south + _sum(customers={"a"})
        # In a chart measure too, and the bookmark's state is no state of the app's.
        cube = qix.handle_of(
            "CreateSessionObject",
            [
                {
                    "qInfo": {"qType": "table"},
                    "qHyperCubeDef": {
                        "qMeasures": [{"qDef": {"qDef": "Sum({BM01} Amount)"}}],
                        "qInitialDataFetch": [{"qTop": 0, "qLeft": 0, "qWidth": 1, "qHeight": 1}],
                    },
                }
            ],
            doc,
        )
        page = qix.result("GetLayout", [], cube)["qLayout"]["qHyperCube"]["qDataPages"][0]
        assert page["qMatrix"][0][0]["qNum"] == south
        assert qix.result("GetAppLayout", [], doc)["qLayout"]["qStateNames"] == []

        # A changed bookmark is read anew; a destroyed one is no identifier any more.
        qix.result("SelectValues", [[{"qText": "North"}]], region)
        bookmark = qix.handle_of("GetBookmark", ["BM01"], doc)
        props = qix.result("GetProperties", [], bookmark)["qProp"]
        qix.result("DestroyBookmark", ["BM01"], doc)
        qix.result(
            "CreateBookmark", [{**props, "qInfo": {"qId": "BM01", "qType": "bookmark"}}], doc
        )
        assert _value(qix, doc, "Sum({BM01} Amount)") == _sum(customers={"a"}, regions={"North"})
        qix.result("DestroyBookmark", ["BM01"], doc)
        gone = qix.call("EvaluateEx", ["Sum({BM01} Amount)"], doc)["error"]
        assert "unknown set identifier 'BM01'" in gone["message"]
        # An alternate state of a bookmark's title takes the name.
        qix.result(
            "CreateBookmark",
            [{"qInfo": {"qId": "BM02", "qType": "bookmark"}, "qMetaDef": {"title": "Compare"}}],
            doc,
        )
        assert _value(qix, doc, "Sum({Compare} Amount)") == _sum(customers={"a"}, regions={"North"})
        qix.result("AddAlternateState", ["Compare"], doc)
        assert _value(qix, doc, "Sum({Compare} Amount)") == _sum()
        assert qix.result("GetAppLayout", [], doc)["qLayout"]["qStateNames"] == ["Compare"]
