"""The SQS endpoint: the SQS wire protocols (AWS JSON 1.0 and query) over the queues of impl."""
