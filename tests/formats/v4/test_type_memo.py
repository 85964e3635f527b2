"""TypeMemo: a value per Arrow type, found by identity, then by equality that sees field ids."""

from __future__ import annotations

import pyarrow as pa

from icefloe.formats.v4.type_memo import TypeMemo


def _stats(field_id: int) -> pa.StructType:
    return pa.struct(
        [pa.field("lower_bound", pa.int64(), metadata={b"PARQUET:field_id": str(field_id).encode()})]
    )


def test_a_type_is_made_once_and_found_again_as_the_same_object_or_an_equal_one() -> None:
    made: list[pa.DataType] = []
    memo: TypeMemo[int] = TypeMemo(lambda t: made.append(t) or len(made))
    t = _stats(10)
    assert memo(t) == memo(t) == memo(_stats(10)) == 1
    assert made == [t]


def test_types_that_differ_only_in_field_ids_are_not_mixed_up() -> None:
    """``pa.DataType.__eq__`` ignores field metadata: the statistics structs of two columns would
    otherwise share the value built with the first column's field ids."""
    memo: TypeMemo[pa.DataType] = TypeMemo(lambda t: t)
    first, second = _stats(10), _stats(11)
    assert first == second  # pyarrow's equality
    assert memo(first).equals(first, check_metadata=True)
    assert memo(second).equals(second, check_metadata=True)
    assert not memo(second).equals(first, check_metadata=True)


def test_a_type_object_that_was_forgotten_is_made_again_from_an_equal_one() -> None:
    calls = []
    memo: TypeMemo[str] = TypeMemo(lambda t: calls.append(t) or str(len(calls)), maxsize=1)
    memo(_stats(1))
    memo(_stats(2))  # pushes the first out of the equality cache
    assert memo(_stats(1)) == "3"


def test_an_equal_type_met_again_keeps_its_value_longest() -> None:
    """The equality cache drops the type used least recently: a hit refreshes it."""
    made: list[int] = []
    memo: TypeMemo[int] = TypeMemo(lambda t: made.append(len(made)) or len(made), maxsize=2)
    memo(_stats(1))
    memo(_stats(2))
    memo(_stats(1))  # an equal, new object: found by equality, now the most recent
    memo(_stats(3))  # pushes out 2, not 1
    assert [memo(_stats(1)), memo(_stats(3)), memo(_stats(2))] == [1, 3, 4]
    assert len(made) == 4
