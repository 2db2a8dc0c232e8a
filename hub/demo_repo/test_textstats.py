import pytest
from textstats import mean, median, word_lengths


def test_word_lengths_counts_each_word():
    assert word_lengths("the quick  brown fox") == [3, 5, 5, 3]


def test_mean_of_word_lengths():
    assert mean([3, 5, 5, 3]) == 4


def test_median_of_an_odd_number_of_values_is_the_middle_one():
    assert median([9, 1, 5]) == 5


def test_median_of_an_even_number_of_values_is_the_mean_of_the_middle_two():
    assert median([1, 2, 3, 4]) == 2.5


def test_empty_input_is_refused():
    with pytest.raises(ValueError):
        median([])
