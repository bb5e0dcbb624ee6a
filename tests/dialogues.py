"""Small dialogues and a model-free retrieval index shared by the negatives and retrieval tests."""

import numpy as np

from density_train.negatives.retrieval import RetrievalIndex

DIALOGUES = [
    ["Hi , how are you ?", "Fine , thanks . And you ?", "Not bad at all .", "Great to hear .", "See you later !"],
    ["Can you pass the salt ?", "Sure , here it is .", "Thanks a lot !"],
    ["What time is it ?", "It is five o'clock .", "Oh no , I am late for my class !", "Hurry up then .", "Bye ."],
    ["Yes .", "No ."],
    ["Do you like jazz ?", "I love it , especially old records .", "Me too .", "Let's go to a concert .", "OK ."],
    ["Where do you live ?", "In a small town near the sea .", "Sounds lovely .", "It is quiet ."],
] * 3  # repeated dialogues: the same utterances in several pairs, as in a real corpus


def hand_index(pool):
    """A retrieval index over ``pool`` from bag-of-characters embeddings (no model needed)."""
    texts = sorted(set(pool))
    vectors = np.zeros((len(texts), 64), dtype=np.float32)
    for row, text in enumerate(texts):
        for char in text.lower():
            vectors[row, ord(char) % 64] += 1
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return RetrievalIndex.from_embeddings(texts, vectors, k=5, ceiling=0.99)
