import unittest

from textstats import mean, median, word_lengths


class TextStatsTest(unittest.TestCase):
    def test_word_lengths_counts_each_word(self):
        self.assertEqual(word_lengths("the quick  brown fox"), [3, 5, 5, 3])

    def test_mean_of_word_lengths(self):
        self.assertEqual(mean([3, 5, 5, 3]), 4)

    def test_median_of_an_odd_number_of_values_is_the_middle_one(self):
        self.assertEqual(median([9, 1, 5]), 5)

    def test_median_of_an_even_number_of_values_is_the_mean_of_the_middle_two(self):
        self.assertEqual(median([1, 2, 3, 4]), 2.5)

    def test_empty_input_is_refused(self):
        with self.assertRaises(ValueError):
            median([])
