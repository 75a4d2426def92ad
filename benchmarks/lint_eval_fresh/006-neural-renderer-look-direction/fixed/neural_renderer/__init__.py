from .look import look
